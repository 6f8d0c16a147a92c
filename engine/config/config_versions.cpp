#include "config_versions.h"

namespace bp {

ConfigVersions::ConfigVersions(const BatchingConfig &initial, TimePoint at)
    : m_current(std::make_shared<const BatchingConfig>(initial))
{
    m_history.push_back({at, 1, "initial", "start", initial});
}

Status ConfigVersions::commit(BatchingConfig config, std::string origin, const std::string &why, TimePoint at,
                              ConfigChange &change)
{
    change = {};
    if (Status s = validate(config); !s)
        return s;
    if (*m_current == config)
        return Status::ok();
    std::string summary = describeChange(*m_current, config);
    if (!why.empty())
        summary = why + ": " + summary;
    change = {at, ++m_version, std::move(summary), std::move(origin), config};
    m_current = std::make_shared<const BatchingConfig>(std::move(config));
    m_history.push_back(change); // bounded; keeps the initial entry
    return Status::ok();
}

} // namespace bp
