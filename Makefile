# weir — PGXS build.  `make installcheck` brings its own preloaded servers
# (--temp-instance), so tests never touch a running cluster.

MODULE_big = weir
OBJS = \
	src/weir.o \
	src/settings.o \
	src/sql_args.o \
	src/clock.o \
	src/shmem.o \
	src/partition.o \
	src/topic.o \
	src/reader.o \
	src/topic_read.o \
	src/read_ahead.o \
	src/process_memory.o \
	src/consumer.o \
	src/catalog.o \
	src/views.o \
	src/launcher.o \
	src/retention.o \
	src/definition.o \
	src/definition_parse.o \
	src/definition_store.o src/write_target.o src/sink_guard.o src/skip.o src/subxact.o src/act_as.o \
	src/aggregate.o \
	src/window.o \
	src/catalog_pipeline.o \
	src/pipeline.o \
	src/worker.o \
	src/checkpoint.o \
	src/checkpoint_apply.o \
	src/checkpoint_package.o \
	src/sink_table.o \
	src/checkpoint_writer.o \
	src/live.o \
	src/sink.o \
	src/sink_rows.o \
	src/sink_order.o \
	src/window_chunks.o \
	src/columns.o \
	src/keyed.o \
	src/dedup.o \
	src/key_image.o \
	src/operator.o \
	src/operator_output.o \
	src/operator_projection.o \
	src/operator_window.o \
	src/lastvalue.o \
	src/join.o \
	src/row_arena.o \
	src/catalog_chunk.o

EXTENSION = weir
DATA = weir--0.1.sql
PGFILEDESC = "weir - stream processing inside PostgreSQL"

PG_CPPFLAGS = -I$(srcdir)/src

REGRESS = setup topic_create topic_read topic_poll topic_views pipeline_define pipeline_run pipeline_generic pipeline_chain pipeline_dedup pipeline_last_value pipeline_projection pipeline_join security poison reinstall
REGRESS_OPTS = --temp-config=$(srcdir)/test/weir.conf --temp-instance=./tmp_regress

ISOLATION = producers_reader producers_three consumer_sessions
ISOLATION_OPTS = --inputdir=$(srcdir)/test --temp-config=$(srcdir)/test/weir_isolation.conf --temp-instance=./tmp_isolation

TAP_TESTS = 1
PROVE_TESTS = test/t/*.pl

EXTRA_CLEAN = tmp_regress tmp_isolation tmp_check output_iso results regression.diffs regression.out log

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS tracks no header dependencies: rebuild every object when a header
# changes, so no object is ever built against an old struct layout.
$(OBJS): $(wildcard $(srcdir)/src/*.h)
