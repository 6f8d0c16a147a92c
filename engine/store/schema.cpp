#include "schema.h"

#include <algorithm>
#include <string>

namespace bp::store {

namespace {

// Version 1. Times: *_us are wall-clock microseconds since the Unix epoch;
// *_ns are nanoseconds on the engine's steady clock, as offsets from the
// session's start.
constexpr const char *kMigration1 = R"sql(
CREATE TABLE sessions (
  id            INTEGER PRIMARY KEY,
  kind          TEXT    NOT NULL DEFAULT 'live',
  started_at_us INTEGER NOT NULL,
  ended_at_us   INTEGER,
  model         TEXT    NOT NULL DEFAULT '',
  device        TEXT    NOT NULL DEFAULT '',
  host          TEXT    NOT NULL DEFAULT '{}',
  notes         TEXT    NOT NULL DEFAULT ''
);
CREATE TABLE config_changes (
  session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  version    INTEGER NOT NULL,
  at_ns      INTEGER NOT NULL,
  origin     TEXT    NOT NULL,
  summary    TEXT    NOT NULL,
  config     TEXT    NOT NULL,
  PRIMARY KEY (session_id, version)
);
CREATE TABLE requests (
  session_id    INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  request_id    INTEGER NOT NULL,
  arrival_ns    INTEGER NOT NULL,
  queue_wait_ns INTEGER NOT NULL,
  compute_ns    INTEGER NOT NULL,
  total_ns      INTEGER NOT NULL,
  ttft_ns       INTEGER NOT NULL,
  input_tokens  INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  bucket        INTEGER NOT NULL,
  batch_id      INTEGER NOT NULL,
  status        TEXT    NOT NULL
);
CREATE INDEX requests_by_session ON requests(session_id);
CREATE TABLE batches (
  session_id     INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  batch_id       INTEGER NOT NULL,
  dispatched_ns  INTEGER NOT NULL,
  intended_ns    INTEGER NOT NULL,
  size           INTEGER NOT NULL,
  padded_length  INTEGER NOT NULL,
  real_tokens    INTEGER NOT NULL,
  padded_tokens  INTEGER NOT NULL,
  compute_ns     INTEGER NOT NULL,
  reason         TEXT    NOT NULL,
  policy         TEXT    NOT NULL,
  bucket         INTEGER NOT NULL,
  executor       INTEGER NOT NULL,
  config_version INTEGER NOT NULL,
  status         TEXT    NOT NULL
);
CREATE INDEX batches_by_session ON batches(session_id);
CREATE TABLE metric_samples (
  session_id          INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  at_ns               INTEGER NOT NULL,
  requests_per_s      REAL    NOT NULL,
  input_tokens_per_s  REAL    NOT NULL,
  output_tokens_per_s REAL    NOT NULL,
  total_p50_us        REAL    NOT NULL,
  total_p90_us        REAL    NOT NULL,
  total_p99_us        REAL    NOT NULL,
  queue_wait_p99_us   REAL    NOT NULL,
  queue_depth         INTEGER NOT NULL,
  in_flight           INTEGER NOT NULL,
  mean_batch_size     REAL    NOT NULL,
  padding_efficiency  REAL    NOT NULL,
  busy_fraction       REAL    NOT NULL,
  submitted           INTEGER NOT NULL,
  completed           INTEGER NOT NULL,
  failed              INTEGER NOT NULL,
  config_version      INTEGER NOT NULL
);
CREATE INDEX metric_samples_by_session ON metric_samples(session_id, at_ns);
CREATE TABLE traces (
  id             INTEGER PRIMARY KEY,
  name           TEXT    NOT NULL,
  source_path    TEXT    NOT NULL DEFAULT '',
  format         TEXT    NOT NULL,
  imported_at_us INTEGER NOT NULL,
  row_count      INTEGER NOT NULL,
  skipped_rows   INTEGER NOT NULL DEFAULT 0,
  duration_s     REAL    NOT NULL
);
CREATE TABLE trace_requests (
  trace_id      INTEGER NOT NULL REFERENCES traces(id) ON DELETE CASCADE,
  idx           INTEGER NOT NULL,
  arrival_ns    INTEGER NOT NULL,
  input_tokens  INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  PRIMARY KEY (trace_id, idx)
) WITHOUT ROWID;
)sql";

// Version 2: replays know their source; the session and the per-second
// samples keep how many rows the logger had to drop.
constexpr const char *kMigration2 = R"sql(
ALTER TABLE sessions ADD COLUMN source_session_id INTEGER REFERENCES sessions(id) ON DELETE SET NULL;
ALTER TABLE sessions ADD COLUMN source_trace_id INTEGER REFERENCES traces(id) ON DELETE SET NULL;
ALTER TABLE sessions ADD COLUMN replay TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN dropped_rows INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN logging_error TEXT NOT NULL DEFAULT '';
ALTER TABLE requests ADD COLUMN source TEXT NOT NULL DEFAULT 'live';
ALTER TABLE metric_samples ADD COLUMN dropped_rows INTEGER NOT NULL DEFAULT 0;
CREATE INDEX sessions_by_source_session ON sessions(source_session_id);
CREATE INDEX sessions_by_source_trace ON sessions(source_trace_id);
)sql";

// Version 3: remote sessions (`batchpilot replay --target URL`) keep the
// target's URL, and the series scraped from the target's Prometheus
// /metrics get their own table (one row per scrape; a series the server
// does not expose is NULL, a failed scrape a row with only `error`).
constexpr const char *kMigration3 = R"sql(
ALTER TABLE sessions ADD COLUMN target_url TEXT NOT NULL DEFAULT '';
CREATE TABLE target_samples (
  session_id      INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  at_ns           INTEGER NOT NULL,
  server          TEXT    NOT NULL,
  batch_size      REAL,
  queue           REAL,
  running         REAL,
  waiting         REAL,
  kv_usage        REAL,
  tokens_per_step REAL,
  error           TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX target_samples_by_session ON target_samples(session_id, at_ns);
)sql";

// Version 4: traces keep the prefix blocks of formats that carry them
// (Mooncake, genai-perf payloads): a request's hash ids, comma-separated, in
// prompt order, each standing for block_tokens tokens. NULL for the others.
constexpr const char *kMigration4 = R"sql(
ALTER TABLE traces ADD COLUMN block_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE trace_requests ADD COLUMN hash_ids TEXT;
)sql";

// Version 5: cost-model calibrations (engine/sim/calibration/calibration.h) for
// simulated replays; the whole calibration is one JSON document, the key
// columns are there to find it.
constexpr const char *kMigration5 = R"sql(
CREATE TABLE calibrations (
  id            INTEGER PRIMARY KEY,
  created_at_us INTEGER NOT NULL,
  model         TEXT    NOT NULL,
  preset        TEXT    NOT NULL DEFAULT '',
  device        TEXT    NOT NULL,
  threads       INTEGER NOT NULL,
  source        TEXT    NOT NULL DEFAULT '',
  calibration   TEXT    NOT NULL
);
CREATE INDEX calibrations_by_key ON calibrations(model, preset, device, threads);
)sql";

// Version 6: token-level timing. A request's time per output
// token and a summary of its inter-token gaps (the gaps themselves stay in
// memory: n - 1 per request); a step's tokens, joins, state after it and
// preemptions (policy continuous; zero for request batches and old rows).
constexpr const char *kMigration6 = R"sql(
ALTER TABLE requests ADD COLUMN tpot_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE requests ADD COLUMN itl_p50_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE requests ADD COLUMN itl_max_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE batches ADD COLUMN prefill_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE batches ADD COLUMN decode_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE batches ADD COLUMN joined INTEGER NOT NULL DEFAULT 0;
ALTER TABLE batches ADD COLUMN running INTEGER NOT NULL DEFAULT 0;
ALTER TABLE batches ADD COLUMN waiting INTEGER NOT NULL DEFAULT 0;
ALTER TABLE batches ADD COLUMN kv_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE batches ADD COLUMN preempted INTEGER NOT NULL DEFAULT 0;
)sql";

// Version 7: tuning results (`batchpilot tune`, engine/store/tuning_store.h):
// the search's source, SLO, objective and calibration, its result as one
// JSON document, and the real-clock replay that verified it.
constexpr const char *kMigration7 = R"sql(
CREATE TABLE tunings (
  id                INTEGER PRIMARY KEY,
  created_at_us     INTEGER NOT NULL,
  source_session_id INTEGER REFERENCES sessions(id) ON DELETE SET NULL,
  source_trace_id   INTEGER REFERENCES traces(id) ON DELETE SET NULL,
  verify_session_id INTEGER REFERENCES sessions(id) ON DELETE SET NULL,
  calibration_id    INTEGER NOT NULL DEFAULT 0,
  slo               TEXT    NOT NULL,
  objective         TEXT    NOT NULL,
  result            TEXT    NOT NULL
);
CREATE INDEX tunings_by_verify_session ON tunings(verify_session_id);
CREATE INDEX tunings_by_source_session ON tunings(source_session_id);
)sql";

// Version 8: calibrations of remote servers (`calibrate --target`)
// are keyed by the server's URL and kind beside the model's name there.
constexpr const char *kMigration8 = R"sql(
ALTER TABLE calibrations ADD COLUMN target_url TEXT NOT NULL DEFAULT '';
ALTER TABLE calibrations ADD COLUMN server TEXT NOT NULL DEFAULT '';
CREATE INDEX calibrations_by_target ON calibrations(target_url, model, server);
)sql";

// Version 9: the KV prefix cache: a request's prompt tokens served
// from the cache at its first join (policy continuous with
// prefix_cache.enabled; 0 otherwise and in older rows).
constexpr const char *kMigration9 = R"sql(
ALTER TABLE requests ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0;
)sql";

// Version 10: multi-turn conversations. A trace row and
// a session's request name their conversation (0 = none) and turn (1-based;
// 0 = none); a trace row also keeps its think time (a follow-up turn is sent
// that long after the previous answer completes). A remote target's scrape
// keeps the server's prefix-cache hit rate.
constexpr const char *kMigration10 = R"sql(
ALTER TABLE trace_requests ADD COLUMN conversation_id INTEGER NOT NULL DEFAULT 0;
ALTER TABLE trace_requests ADD COLUMN turn INTEGER NOT NULL DEFAULT 0;
ALTER TABLE trace_requests ADD COLUMN think_time_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE requests ADD COLUMN conversation_id INTEGER NOT NULL DEFAULT 0;
ALTER TABLE requests ADD COLUMN turn INTEGER NOT NULL DEFAULT 0;
ALTER TABLE target_samples ADD COLUMN prefix_cache_hit_rate REAL;
)sql";

// Version 11: fleets. A simulated fleet's requests and batches
// name the replica that served them, a request how long it waited in the
// router's queue; each replica's figures are a row of `replica_figures`;
// capacity plans (`batchpilot plan`) are rows of `capacity_plans`, the
// plan itself one JSON document.
constexpr const char *kMigration11 = R"sql(
ALTER TABLE requests ADD COLUMN replica INTEGER NOT NULL DEFAULT 0;
ALTER TABLE requests ADD COLUMN router_wait_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE batches ADD COLUMN replica INTEGER NOT NULL DEFAULT 0;
CREATE TABLE replica_figures (
  session_id       INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  replica          INTEGER NOT NULL,
  routed           INTEGER NOT NULL,
  completed        INTEGER NOT NULL,
  failed           INTEGER NOT NULL,
  batches          INTEGER NOT NULL,
  busy_s           REAL    NOT NULL,
  peak_outstanding INTEGER NOT NULL,
  peak_kv_tokens   INTEGER NOT NULL,
  preemptions      INTEGER NOT NULL,
  output_tokens    INTEGER NOT NULL,
  PRIMARY KEY (session_id, replica)
) WITHOUT ROWID;
CREATE TABLE capacity_plans (
  id                INTEGER PRIMARY KEY,
  created_at_us     INTEGER NOT NULL,
  source_session_id INTEGER REFERENCES sessions(id) ON DELETE SET NULL,
  source_trace_id   INTEGER REFERENCES traces(id) ON DELETE SET NULL,
  calibration_id    INTEGER NOT NULL DEFAULT 0,
  slo               TEXT    NOT NULL,
  result            TEXT    NOT NULL
);
CREATE INDEX capacity_plans_by_session ON capacity_plans(source_session_id);
CREATE INDEX capacity_plans_by_trace ON capacity_plans(source_trace_id);
)sql";

// Version 12: a calibration's dtype is part of its key (the same model in
// bfloat16 and float32 are two models to time; docs/schema.md).
constexpr const char *kMigration12 = R"sql(
ALTER TABLE calibrations ADD COLUMN dtype TEXT NOT NULL DEFAULT 'float32';
)sql";

// Version 13: autoscaler replays (`batchpilot autoscale --trace`):
// a policy run over a trace, the run itself one JSON document.
constexpr const char *kMigration13 = R"sql(
CREATE TABLE autoscale_runs (
  id              INTEGER PRIMARY KEY,
  created_at_us   INTEGER NOT NULL,
  source_trace_id INTEGER REFERENCES traces(id) ON DELETE SET NULL,
  calibration_id  INTEGER NOT NULL DEFAULT 0,
  slo             TEXT    NOT NULL,
  policy          TEXT    NOT NULL,
  result          TEXT    NOT NULL
);
CREATE INDEX autoscale_runs_by_trace ON autoscale_runs(source_trace_id);
)sql";

constexpr const char *kMigrations[] = {kMigration1,  kMigration2,  kMigration3, kMigration4, kMigration5,
                                       kMigration6,  kMigration7,  kMigration8, kMigration9, kMigration10,
                                       kMigration11, kMigration12, kMigration13};
static_assert(std::size(kMigrations) == kSchemaVersion);

} // namespace

Result<FileIdentity> identify(sqlite::Connection &db)
{
    FileIdentity id;
    // The first read of the header: a file that is not SQLite fails here.
    auto app = db.queryInt("PRAGMA application_id");
    if (!app) {
        if (app.status().code() == StatusCode::InvalidArgument)
            return Status(StatusCode::InvalidArgument,
                          "'" + db.path() + "' is not a BatchPilot trace database (not an SQLite file)");
        return app.status();
    }
    id.applicationId = *app;
    auto version = db.queryInt("PRAGMA user_version");
    if (!version)
        return version.status();
    id.userVersion = int(*version);
    auto objects = db.queryInt("SELECT count(*) FROM sqlite_schema");
    if (!objects)
        return objects.status();
    id.objects = *objects;
    return id;
}

Status migrate(sqlite::Connection &db, int target)
{
    // The version is read inside the write transaction, never before it:
    // another process (or connection) opening the same old file may be
    // migrating it at this moment. BEGIN IMMEDIATE waits for its write lock
    // (the busy timeout), and once we hold ours the version we read is the
    // one we build on; a step another connection already made is skipped
    // (reading it before the lock let both migrate, and the second
    // failed on "duplicate column"). A version already at `target` is final
    // (versions only go up), so an up-to-date file takes no write lock.
    const int wanted = std::min(target, kSchemaVersion);
    auto seen = db.queryInt("PRAGMA user_version");
    if (!seen)
        return seen.status();
    if (*seen >= wanted)
        return Status::ok();
    for (;;) {
        sqlite::Transaction tx(db);
        if (Status s = tx.begin(); !s)
            return s;
        auto current = db.queryInt("PRAGMA user_version");
        if (!current)
            return current.status();
        const int v = int(*current) + 1;
        if (v > wanted)
            return tx.commit(); // up to date (another connection finished it): nothing written
        std::string sql = kMigrations[v - 1];
        if (v == 1)
            sql += "PRAGMA application_id = " + std::to_string(kApplicationId) + ";";
        sql += "PRAGMA user_version = " + std::to_string(v) + ";";
        if (Status s = db.exec(sql, "migrate the schema to version " + std::to_string(v)); !s)
            return s;
        if (Status s = tx.commit(); !s)
            return s;
    }
}

Result<sqlite::Connection> openConnection(const std::string &path)
{
    auto db = sqlite::Connection::open(path, sqlite::Connection::Mode::ReadWrite);
    if (!db)
        return db.status();
    if (Status s = configureConnection(*db); !s)
        return s;
    return std::move(db.value());
}

Status configureConnection(sqlite::Connection &db)
{
    auto mode = db.queryText("PRAGMA journal_mode = WAL");
    if (!mode)
        return mode.status();
    // An in-memory or read-only database cannot switch; that is not an error
    // for reading, and writes will report their own failure.
    return db.exec("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;", "configure the connection");
}

} // namespace bp::store
