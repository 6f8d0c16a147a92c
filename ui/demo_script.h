// Drives the console from a script for screenshots and demos, through the
// same widgets an operator uses. Set BATCHPILOT_CONSOLE_DEMO to steps
// separated by ';' (docs/console.md):
//   wait=2.5                 pause the script (seconds)
//   traffic=3000 | traffic=off   start synthetic traffic at a rate / stop it
//   set=max_batch_size:32    set a knob in the control panel and apply it
//                            (policy, max_batch_size, max_queue_delay (e.g. 2ms),
//                            static_batch_size, static_padded_length, instances,
//                            queue_capacity, bucket_edges (e.g. 64,256,1024), or any
//                            knob of the table by its key: set=goodput.ttft_us:500ms,
//                            set=continuous.max_num_seqs:32)
//   lengths=16-64 | lengths=64   traffic: uniform or fixed prompt lengths
//   new_tokens=32            traffic: max_new_tokens
//   target=embedded | target=URL,PROTOCOL,MODEL   traffic to this console's
//                            engine or to a server (protocol oip, openai, openai-chat)
//   window=60                chart window in seconds
//   show=live|compare|fleet|traces|timeline
//   fleet=trace:latest|trace:ID|session:ID|session:last-replay   the Fleet view
//                            on that source (waits for its newest plan)
//   hide=controls|traffic|timeline|traces|remote|advisor   close a dock
//   import=FILE.csv          import a trace (waits until done)
//   replay=trace:latest:4[:virtual] | replay=session:ID:1   (waits until done)
//   compare=A,B | compare=last-replay   (waits until loaded)
//   select=session:ID | select=trace:latest   select a row in the traces view
//   advise=source:trace:latest|session:ID, advise=speed:X|length_scale:S|limit:N|budget:N,
//   advise=slo:SPEC (as tune --slo), advise=objective:goodput|throughput,
//   advise=run (waits for the search), advise=select:ROW, advise=apply
//                            the Advisor dock (shown by any of them)
//   screenshot=FILE.png      grab the window
//   quit
// Errors are printed to stderr as "demo: ..." and end the script.
#pragma once

#include <QObject>
#include <QStringList>
#include <QTimer>

namespace bp::ui {

class MainWindow;
class TracesView;

class DemoScript : public QObject {
    Q_OBJECT
public:
    DemoScript(MainWindow &window, const QString &script);
    void start();

    static constexpr const char *kEnvironmentVariable = "BATCHPILOT_CONSOLE_DEMO";

signals:
    void finished();

private:
    void next();
    bool run(const QString &command, const QString &argument); // false: wait for an event to continue
    // One step each (demo_script_steps.cpp); false: wait for an event to continue.
    bool stepWait(const QString &argument);
    bool stepTraffic(const QString &argument);
    bool stepSet(const QString &argument);
    bool stepLengths(const QString &argument);
    bool stepNewTokens(const QString &argument);
    bool stepTarget(const QString &argument);
    bool stepWindow(const QString &argument);
    bool stepShow(const QString &argument);
    bool stepImport(const QString &argument);
    bool stepReplay(const QString &argument);
    bool stepCompare(const QString &argument);
    bool stepSelect(const QString &argument);
    bool stepHide(const QString &argument);
    bool stepFleet(const QString &argument);
    bool stepScreenshot(const QString &argument);
    bool stepQuit(const QString &argument);
    bool advise(const QString &argument);
    bool setKnob(const QString &key, const QString &value); // any knob of the table; false: unknown
    void fail(const QString &message);
    void continueAfter(QMetaObject::Connection &a, QMetaObject::Connection &b);
    // Goes on once the Traces dock has reloaded its lists.
    void continueAfterRefresh(TracesView *traces);

    MainWindow &m_window;
    QStringList m_steps;
    int m_index = 0;
    std::int64_t m_lastReplay = 0;
    QMetaObject::Connection m_done, m_failed;
};

} // namespace bp::ui
