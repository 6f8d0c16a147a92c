#include "engine/sim/calibration/calibration_store.h"

#include "engine/store/schema.h"
#include "engine/store/sqlite_db.h"
#include "engine/store/store_types.h"
#include "engine/store/trace_store.h"

#include <sqlite3.h>

#include <charconv>
#include <functional>

namespace bp {

namespace {

Result<Calibration> readRow(const sqlite::Statement &st)
{
    auto j = nlohmann::json::parse(st.textAt(1), nullptr, false);
    if (j.is_discarded())
        return Status(StatusCode::Internal,
                      "calibration " + std::to_string(st.int64At(0)) + " is not valid JSON");
    auto c = calibrationFromJson(j);
    if (!c)
        return c.status();
    c->id = st.int64At(0);
    return c;
}

Result<std::vector<Calibration>> query(const TraceStore &store, const std::string &where,
                                       const std::function<void(sqlite::Statement &)> &bind)
{
    auto db = store::openConnection(store.path());
    if (!db)
        return db.status();
    auto st = db->prepare("SELECT id, calibration FROM calibrations " + where + " ORDER BY id DESC");
    if (!st)
        return st.status();
    if (bind)
        bind(*st);
    std::vector<Calibration> out;
    for (;;) {
        const int rc = st->step();
        if (rc == SQLITE_DONE)
            break;
        if (rc != SQLITE_ROW)
            return db->error(rc, "read calibrations");
        auto c = readRow(*st);
        if (!c)
            return c.status();
        out.push_back(std::move(c.value()));
    }
    return out;
}

} // namespace

Result<std::int64_t> saveCalibration(const TraceStore &store, const Calibration &calibration)
{
    auto db = store::openConnection(store.path());
    if (!db)
        return db.status();
    Calibration c = calibration;
    if (c.createdAtUs == 0)
        c.createdAtUs = wallClockMicros();
    auto st = db->prepare("INSERT INTO calibrations (created_at_us, model, preset, device, threads, source, "
                          "calibration, target_url, server, dtype) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    if (!st)
        return st.status();
    c.id = 0;
    st->bind(1, c.createdAtUs);
    st->bind(2, c.model);
    st->bind(3, c.preset);
    st->bind(4, c.device);
    st->bind(5, std::int64_t(c.threads));
    st->bind(6, c.source);
    st->bind(7, toJson(c).dump());
    st->bind(8, c.remote ? c.remote->url : std::string());
    st->bind(9, c.remote ? c.remote->server : std::string());
    st->bind(10, c.dtype);
    if (const int rc = st->step(); rc != SQLITE_DONE)
        return db->error(rc, "store a calibration");
    return db->lastInsertId();
}

Result<std::vector<Calibration>> listCalibrations(const TraceStore &store)
{
    return query(store, "", {});
}

Result<Calibration> loadCalibration(const TraceStore &store, std::int64_t id)
{
    auto rows = query(store, "WHERE id = ?", [&](sqlite::Statement &st) { st.bind(1, id); });
    if (!rows)
        return rows.status();
    if (rows->empty())
        return Status(StatusCode::NotFound, "no calibration " + std::to_string(id));
    return rows->front();
}

Result<Calibration> latestCalibration(const TraceStore &store, const std::string &model,
                                      const std::string &preset, const std::string &device,
                                      std::optional<int> threads, const std::string &dtype)
{
    auto rows = query(store,
                      "WHERE model = ? AND (? = '' OR preset = ?) AND (? = '' OR device = ?) AND (? < 0 OR "
                      "threads = ?) AND (? = '' OR dtype = ?)",
                      [&](sqlite::Statement &st) {
                          st.bind(1, model);
                          st.bind(2, preset);
                          st.bind(3, preset);
                          st.bind(4, device);
                          st.bind(5, device);
                          st.bind(6, std::int64_t(threads.value_or(-1)));
                          st.bind(7, std::int64_t(threads.value_or(-1)));
                          st.bind(8, dtype);
                          st.bind(9, dtype);
                      });
    if (!rows)
        return rows.status();
    if (rows->empty())
        return Status(StatusCode::NotFound,
                      "no calibration for " + model + (preset.empty() ? "" : " (" + preset + ")") +
                          (device.empty() ? "" : " on " + device) + (dtype.empty() ? "" : " in " + dtype) +
                          "; run: batchpilot calibrate --model " + model);
    return rows->front();
}

Result<Calibration> latestRemoteCalibration(const TraceStore &store, const std::string &url,
                                            const std::string &model, const std::string &server)
{
    auto rows = query(store, "WHERE target_url = ? AND model = ? AND (? = '' OR server = ?)",
                      [&](sqlite::Statement &st) {
                          st.bind(1, url);
                          st.bind(2, model);
                          st.bind(3, server);
                          st.bind(4, server);
                      });
    if (!rows)
        return rows.status();
    if (rows->empty())
        return Status(StatusCode::NotFound, "no calibration of " + model + " at " + url +
                                                "; run: batchpilot calibrate --target " + url + " --model " +
                                                model);
    return rows->front();
}

Result<Calibration> resolveCalibration(const TraceStore &store, const std::string &ref)
{
    std::int64_t id = 0;
    const auto [end, ec] = std::from_chars(ref.data(), ref.data() + ref.size(), id);
    if (ec == std::errc() && end == ref.data() + ref.size() && id > 0)
        return loadCalibration(store, id);
    return loadCalibrationFile(ref);
}

} // namespace bp
