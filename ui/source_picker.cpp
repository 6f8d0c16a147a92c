#include "source_picker.h"

#include "session_list_model.h"
#include "trace_list_model.h"

namespace bp::ui {

SourcePicker::SourcePicker(TraceListModel *traces, SessionListModel *sessions, Detail detail, QWidget *parent)
    : QComboBox(parent), m_traces(traces), m_sessions(sessions), m_detail(detail)
{
    for (QAbstractItemModel *m :
         {static_cast<QAbstractItemModel *>(m_traces), static_cast<QAbstractItemModel *>(m_sessions)}) {
        if (!m)
            continue;
        connect(m, &QAbstractItemModel::modelReset, this, &SourcePicker::rebuild);
        connect(m, &QAbstractItemModel::rowsInserted, this, &SourcePicker::rebuild);
        connect(m, &QAbstractItemModel::rowsRemoved, this, &SourcePicker::rebuild);
        connect(m, &QAbstractItemModel::dataChanged, this, &SourcePicker::rebuild);
    }
    rebuild();
}

std::optional<ReplaySource> SourcePicker::source() const
{
    if (currentIndex() < 0)
        return std::nullopt;
    return ReplaySource{currentData(KindRole).toInt() == Trace ? ReplaySource::Kind::Trace
                                                               : ReplaySource::Kind::Session,
                        currentData().toLongLong()};
}

int SourcePicker::indexOf(bool session, std::int64_t id) const
{
    for (int i = 0; i < count(); ++i)
        if (itemData(i).toLongLong() == id && itemData(i, KindRole).toInt() == (session ? Session : Trace))
            return i;
    return -1;
}

void SourcePicker::rebuild()
{
    const QVariant kept = currentData();
    const QVariant keptKind = currentData(KindRole);
    const bool counts = m_detail == Detail::Counts;
    bool same = false;
    {
        QSignalBlocker block(this);
        clear();
        if (m_traces)
            for (const TraceInfo &t : m_traces->traces()) {
                QString label = tr("trace %1: %2").arg(t.id).arg(QString::fromStdString(t.name));
                label += counts ? tr(" (%1 requests, %2 s)").arg(t.rows).arg(t.durationS, 0, 'f', 0)
                                : tr(" (%1 requests)").arg(t.rows);
                addItem(label, qlonglong(t.id));
                setItemData(count() - 1, Trace, KindRole);
            }
        if (m_sessions)
            for (const SessionInfo &s : m_sessions->sessions()) {
                QString label = tr("session %1: %2").arg(s.id).arg(m_sessions->describeKind(s));
                if (counts)
                    label += tr(", %1 requests").arg(s.requestCount);
                addItem(label, qlonglong(s.id));
                setItemData(count() - 1, Session, KindRole);
            }
        int index = count() ? 0 : -1;
        for (int i = 0; i < count(); ++i)
            if (itemData(i) == kept && itemData(i, KindRole) == keptKind) {
                index = i;
                same = true;
            }
        setCurrentIndex(index);
    }
    emit rebuilt(same);
}

} // namespace bp::ui
