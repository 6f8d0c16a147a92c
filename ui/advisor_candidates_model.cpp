#include "advisor_candidates_model.h"

#include <QFont>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace bp::ui {

namespace {
QString ms(double seconds)
{
    if (!std::isfinite(seconds))
        return QStringLiteral("∞");
    return QString::number(seconds * 1e3, 'f', seconds < 0.01 ? 2 : 1);
}
} // namespace

AdvisorCandidatesModel::AdvisorCandidatesModel(QObject *parent) : QAbstractTableModel(parent) {}

void AdvisorCandidatesModel::setResult(const TuneResult &result, TuneObjective objective, int rows)
{
    beginResetModel();
    const auto &cs = result.candidates;
    std::vector<int> order(cs.size());
    std::iota(order.begin(), order.end(), 0);
    const int rec = result.recommended ? int(*result.recommended) : -1;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        if (a == rec || b == rec)
            return a == rec && b != rec;
        return better(cs[std::size_t(a)].figures, cs[std::size_t(a)].config, cs[std::size_t(b)].figures,
                      cs[std::size_t(b)].config, objective);
    });
    order.resize(std::min<std::size_t>(order.size(), std::size_t(std::max(0, rows))));
    m_indices = order;
    m_rows.clear();
    m_tokens = false;
    for (int i : order) {
        m_rows.push_back(cs[std::size_t(i)]);
        m_tokens = m_tokens || cs[std::size_t(i)].figures.ttftP99S > 0;
    }
    m_recommended = rec;
    endResetModel();
}

void AdvisorCandidatesModel::clear()
{
    beginResetModel();
    m_rows.clear();
    m_indices.clear();
    m_recommended = -1;
    endResetModel();
}

int AdvisorCandidatesModel::candidateAt(int row) const
{
    return row >= 0 && row < int(m_indices.size()) ? m_indices[std::size_t(row)] : -1;
}

const TuneCandidate *AdvisorCandidatesModel::candidate(int row) const
{
    return row >= 0 && row < int(m_rows.size()) ? &m_rows[std::size_t(row)] : nullptr;
}

int AdvisorCandidatesModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_rows.size());
}

int AdvisorCandidatesModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant AdvisorCandidatesModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return {};
    const TuneCandidate &c = m_rows[std::size_t(index.row())];
    const TuneFigures &f = c.figures;
    const bool recommended = m_indices[std::size_t(index.row())] == m_recommended;
    switch (role) {
    case IndexRole: return m_indices[std::size_t(index.row())];
    case Qt::FontRole:
        if (recommended) {
            QFont bold;
            bold.setBold(true);
            return bold;
        }
        return {};
    case Qt::TextAlignmentRole:
        return index.column() == Config ? QVariant() : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::ToolTipRole:
        if (index.column() == Config)
            return tr("%1%2%3\n%4 of %5 requests completed, %6 within the SLO; SLO ratio %7")
                .arg(QString::fromStdString(c.label))
                .arg(recommended ? tr(" — recommended") : QString())
                .arg(c.pareto ? tr(" — on the Pareto front") : QString())
                .arg(f.completed)
                .arg(f.requests)
                .arg(f.good)
                .arg(std::isfinite(f.sloRatio) ? QString::number(f.sloRatio, 'f', 2) : QStringLiteral("∞"));
        return {};
    case Qt::DisplayRole: break;
    default: return {};
    }
    switch (index.column()) {
    case Config:
        return QString::fromStdString(c.label) + (recommended ? tr("  ★") : c.pareto ? tr("  ◆") : QString());
    case Throughput: return QString::number(f.throughputPerS, 'f', 1);
    case Goodput: return QString::number(f.goodputPerS, 'f', 1);
    case P50: return ms(f.p50S);
    case P99: return ms(f.p99S);
    case TtftP99: return m_tokens ? ms(f.ttftP99S) : QStringLiteral("–");
    case TpotP99: return m_tokens ? ms(f.tpotP99S) : QStringLiteral("–");
    case MeanBatch: return QString::number(f.meanBatch, 'f', 1);
    case SloMet: return f.sloMet ? tr("yes") : tr("no");
    default: return {};
    }
}

QVariant AdvisorCandidatesModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case Config: return tr("Config (★ recommended, ◆ Pareto)");
    case Throughput: return tr("req/s");
    case Goodput: return tr("goodput/s");
    case P50: return tr("p50 ms");
    case P99: return tr("p99 ms");
    case TtftP99: return tr("TTFT p99 ms");
    case TpotP99: return tr("TPOT p99 ms");
    case MeanBatch: return tr("batch");
    case SloMet: return tr("SLO met");
    default: return {};
    }
}

} // namespace bp::ui
