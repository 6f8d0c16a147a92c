// The source picker: one combo box of the Traces dock's lists, imported
// traces first, then recorded sessions, for the views that work on one of
// them (the Advisor dock, the Fleet view). It follows the lists: on a reset,
// an insert, a removal or a change of their data the items are rebuilt with
// their signals blocked, the source picked before stays picked (else the
// first), and rebuilt() says whether the pick is the same source.
//
// Each item's data: the id (Qt::UserRole) and what it is (KindRole: Trace
// or Session), which scripts read as well (demo_script.cpp).
#pragma once

#include "engine/replay/replayer.h"

#include <QComboBox>

#include <optional>

namespace bp::ui {

class SessionListModel;
class TraceListModel;

class SourcePicker : public QComboBox {
    Q_OBJECT
public:
    static constexpr int KindRole = Qt::UserRole + 1;
    enum Kind { Trace = 0, Session = 1 };
    // What an item says besides the id and the name (a trace's request
    // count always): Counts adds a trace's duration and a session's requests.
    enum class Detail { Brief, Counts };

    // `traces` and `sessions` may be null (nothing listed of that kind) and
    // must outlive the picker. The items are built at once.
    SourcePicker(TraceListModel *traces, SessionListModel *sessions, Detail detail,
                 QWidget *parent = nullptr);

    // The picked source; nullopt when nothing is listed.
    std::optional<ReplaySource> source() const;
    // The index of the trace (the session when `session`) `id`; -1 when it is not listed.
    int indexOf(bool session, std::int64_t id) const;

public slots:
    void rebuild();

signals:
    // The items were rebuilt; `samePick`: the source picked before is picked again.
    void rebuilt(bool samePick);

private:
    TraceListModel *m_traces;
    SessionListModel *m_sessions;
    Detail m_detail;
};

} // namespace bp::ui
