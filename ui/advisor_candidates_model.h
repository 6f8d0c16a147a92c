// The Advisor dock's table: the best candidates of a search, best first
// (the recommendation on top, then the tuner's ranking, better()), with
// their predicted figures. Qt::UserRole on any column is the candidate's
// index in the search result; the recommended row is shown in bold and the
// Pareto-front rows carry a mark.
#pragma once

#include "engine/sim/tune/tuner.h"

#include <QAbstractTableModel>

#include <vector>

namespace bp::ui {

class AdvisorCandidatesModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Config, Throughput, Goodput, P50, P99, TtftP99, TpotP99, MeanBatch, SloMet, ColumnCount };
    static constexpr int IndexRole = Qt::UserRole;
    static constexpr int kDefaultRows = 25;

    explicit AdvisorCandidatesModel(QObject *parent = nullptr);

    // Keeps the best `rows` candidates of `result` (ranked by `objective`).
    void setResult(const TuneResult &result, TuneObjective objective, int rows = kDefaultRows);
    void clear();
    // The candidate index (into the search result) of a row, or -1.
    int candidateAt(int row) const;
    const TuneCandidate *candidate(int row) const;
    bool generative() const { return m_tokens; }

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    std::vector<TuneCandidate> m_rows;
    std::vector<int> m_indices;
    int m_recommended = -1; // candidate index
    bool m_tokens = false;  // some candidate has TTFT figures
};

} // namespace bp::ui
