// SIGINT/SIGTERM as a Qt signal, for --headless's graceful shutdown. The
// handler only write()s the signal number to a socket pair (async-signal-
// safe); a QSocketNotifier turns that into `received` on the owner's thread.
// After the first signal the default action is restored, so a second
// Ctrl-C ends a drain that takes too long.
//
// One instance per process at a time.
#pragma once

#include <QObject>

#include <initializer_list>

class QSocketNotifier;

namespace bp::rest {

class SignalWatcher : public QObject {
    Q_OBJECT
public:
    explicit SignalWatcher(std::initializer_list<int> signalNumbers, QObject *parent = nullptr);
    ~SignalWatcher() override;

    bool isValid() const { return m_notifier != nullptr; }

signals:
    void received(int signalNumber);

private:
    void onReadable();

    QSocketNotifier *m_notifier = nullptr;
    int m_watched[8] = {};
    int m_count = 0;
};

} // namespace bp::rest
