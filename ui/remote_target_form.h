// The remote server a replay or the Traffic panel drives instead of the
// embedded engine (docs/remote.md): URL, protocol (OIP infer | OpenAI
// /v1/completions or /v1/chat/completions, streaming), the model's name on the server, a bearer
// token, the concurrency cap and the /metrics scrape interval. One form,
// used by the Replay dialog and the Traffic panel; the last choices are
// kept in QSettings under the group given (the token never is).
#pragma once

#include "app/remote/http_remote_target.h"

#include <QWidget>

class QComboBox;
class QFormLayout;
class QLineEdit;
class QSettings;
class QSpinBox;

namespace bp::ui {

class RemoteTargetForm : public QWidget {
    Q_OBJECT
public:
    explicit RemoteTargetForm(QWidget *parent = nullptr);

    // The options as typed (not validated: remote::validate() says what is wrong).
    remote::RemoteOptions options() const;

    // Keys remoteUrl, remoteProtocol, remoteModel, remoteConcurrency,
    // remoteMaxQueued, remoteScrapeMs in the settings' current group.
    void restore(QSettings &settings);
    void save(QSettings &settings) const;

    QLineEdit *urlEdit() const { return m_url; }
    QComboBox *protocolBox() const { return m_protocol; }
    QLineEdit *modelEdit() const { return m_model; }
    QLineEdit *tokenEdit() const { return m_token; }
    QSpinBox *concurrencyBox() const { return m_concurrency; }
    QSpinBox *maxQueuedBox() const { return m_maxQueued; }
    QSpinBox *scrapeBox() const { return m_scrapeMs; }

signals:
    void edited();

private:
    QLineEdit *m_url = nullptr;
    QComboBox *m_protocol = nullptr;
    QLineEdit *m_model = nullptr;
    QLineEdit *m_token = nullptr;
    QSpinBox *m_concurrency = nullptr;
    QSpinBox *m_maxQueued = nullptr;
    QSpinBox *m_scrapeMs = nullptr;
};

} // namespace bp::ui
