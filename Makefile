# weir — PGXS build.  `make installcheck` brings its own preloaded servers
# (--temp-instance), so tests never touch a running cluster.

MODULE_big = weir
OBJS = \
	src/weir.o \
	src/base/settings.o \
	src/base/sql_args.o \
	src/base/clock.o \
	src/base/version.o \
	src/base/shmem.o \
	src/base/progress.o \
	src/topic/partition.o \
	src/topic/topic.o \
	src/topic/reader.o \
	src/topic/topic_read.o \
	src/pipeline/read_ahead.o \
	src/pipeline/reading.o \
	src/source/topic_source.o \
	src/base/process_memory.o \
	src/topic/consumer.o \
	src/catalog_sql/catalog.o \
	src/topic/views.o \
	src/pipeline/launcher.o \
	src/topic/retention.o \
	src/topic/topic_watermark.o \
	src/definition/definition.o \
	src/definition/definition_parse.o \
	src/definition/definition_store.o src/definition/write_target.o src/definition/definition_restored.o src/sink/sink_guard.o src/pipeline/skip.o src/base/subxact.o src/base/transaction.o src/base/act_as.o \
	src/definition/aggregate.o \
	src/definition/change_topic.o \
	src/state/store.o \
	src/state/window.o \
	src/catalog_sql/catalog_pipeline.o \
	src/catalog_sql/catalog_counters.o \
	src/pipeline/pipeline.o \
	src/pipeline/progress_view.o \
	src/pipeline/checkpoint_request.o \
	src/pipeline/worker.o \
	src/pipeline/checkpoint.o \
	src/checkpoint/checkpoint_apply.o \
	src/checkpoint/checkpoint_package.o \
	src/checkpoint/checkpoint_counters.o \
	src/sink/sink_table.o \
	src/sink/sink_sql.o \
	src/sink/remote_link.o \
	src/sink/sink_remote.o \
	src/sink/sink_open.o \
	src/sink/remote_sink_define.o \
	src/sink/remote_sink_orphans.o \
	src/catalog_sql/catalog_remote_sink.o \
	src/catalog_sql/catalog_sink_deletes.o \
	src/pipeline/sink_changes.o \
	src/checkpoint/checkpoint_writer.o \
	src/pipeline/state_view.o \
	src/pipeline/state_scratch.o \
	src/pipeline/restore_drill.o \
	src/pipeline/restore_follow.o \
	src/catalog_sql/catalog_restores.o \
	src/pipeline/state_image.o \
	src/pipeline/state_stats.o \
	src/sink/bulk.o \
	src/sink/sink_rows.o \
	src/sink/sink_order.o \
	src/state/window_chunks.o \
	src/base/columns.o \
	src/base/dead_letter.o \
	src/state/keyed.o \
	src/operator/dedup.o \
	src/definition/key_image.o \
	src/definition/pipeline_plan.o \
	src/operator/operator.o \
	src/operator/keyed_ops.o \
	src/operator/output.o \
	src/operator/projection.o \
	src/operator/window_aggregate.o \
	src/operator/last_value.o \
	src/operator/join.o \
	src/operator/state_view.o \
	src/operator/window_state_view.o \
	src/operator/dedup_state_view.o \
	src/operator/last_value_state_view.o \
	src/operator/join_state_view.o \
	src/state/row_arena.o \
	src/catalog_sql/catalog_chunk.o \
	src/capture/output_plugin.o \
	src/capture/capture_catalog.o \
	src/capture/capture_define.o \
	src/capture/capture_topic.o \
	src/capture/capture_shmem.o \
	src/capture/capture_writer.o \
	src/capture/capture_apply.o \
	src/capture/local_decoder.o \
	src/capture/capture_worker.o \
	src/capture/remote_conn.o \
	src/capture/remote_define.o \
	src/capture/remote_slot_drop.o \
	src/capture/remote_capture.o \
	src/capture/change_read.o

EXTENSION = weir
DATA = weir--0.1.sql weir--0.1--0.2.sql
PGFILEDESC = "weir - stream processing inside PostgreSQL"

PG_CPPFLAGS = -I$(srcdir)/src -I$(libpq_srcdir)
# remote sinks speak libpq (src/sink/remote_link.c), as postgres_fdw does
SHLIB_LINK_INTERNAL = $(libpq)

REGRESS = setup topic_create topic_read topic_poll topic_views pipeline_define pipeline_run pipeline_generic pipeline_chain pipeline_dedup pipeline_dedup_refresh pipeline_session_touching pipeline_last_value pipeline_projection pipeline_join join_filter_late api_names chain_time capture_plugin capture_define change_topic sink_changes checkpoint_summary state_views remote_sink security poison pipeline_counters recovery_target progress explain_state dump_config reinstall
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
$(OBJS): $(wildcard $(srcdir)/src/*.h $(srcdir)/src/*/*.h)

# Makefile.global empties PROVE_FLAGS: set after the include.  --timer puts
# each TAP file's wall time in the log, so a suite that nears its timeout
# (scripts/test.sh, WEIR_TIMEOUT_TAP) shows which file grew.
PROVE_FLAGS = --timer
