#include "trace_export.h"

#include <cmath>

namespace bp {

MooncakeExportStats writeMooncakeJsonl(std::ostream &out, const std::vector<TraceRow> &rows,
                                       const std::vector<PrefixBlocks> &hashIds)
{
    MooncakeExportStats stats;
    stats.syntheticHashIds = hashIds.size() != rows.size();
    std::int64_t nextId = 0;
    std::string line;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const TraceRow &r = rows[i];
        line = "{\"timestamp\": " + std::to_string(std::llround(r.arrivalS * 1e3)) +
               ", \"input_length\": " + std::to_string(r.inputTokens) +
               ", \"output_length\": " + std::to_string(r.outputTokens) + ", \"hash_ids\": [";
        if (!stats.syntheticHashIds) {
            for (std::size_t b = 0; b < hashIds[i].size(); ++b)
                line += (b ? ", " : "") + std::to_string(hashIds[i][b]);
        } else {
            const int blocks = (r.inputTokens + kPrefixBlockTokens - 1) / kPrefixBlockTokens;
            for (int b = 0; b < blocks; ++b)
                line += (b ? ", " : "") + std::to_string(nextId++);
        }
        line += "]}\n";
        out << line;
        ++stats.rows;
    }
    return stats;
}

} // namespace bp
