// The Advisor's verification: replays a window of the source
// for real — the console's model, the wall clock — under the recommended
// (or selected) candidate and shows predicted vs measured. The window box
// takes what `batchpilot tune --verify-window` takes (busiest:3m, first:2m,
// all); the expected duration is shown before it starts; Cancel (the
// dock's) keeps what was verified, marked partial and stored.
#pragma once

#include "advisor_search.h"

#include <QWidget>

class QComboBox;
class QLabel;
class QPushButton;

namespace bp::ui {

class AdvisorVerifyPanel : public QWidget {
    Q_OBJECT
public:
    explicit AdvisorVerifyPanel(AdvisorSearch *search, QWidget *parent = nullptr);

    QComboBox *windowBox() const { return m_window; }
    QPushButton *verifyButton() const { return m_verify; }
    QLabel *expectedText() const { return m_expected; }
    QLabel *resultText() const { return m_result; }
    const std::optional<AdvisorVerification> &verification() const { return m_verification; }

    // The window the box names; InvalidArgument (the reason shown) otherwise.
    Result<VerifyWindowSpec> window() const;
    // A finished search (null: none): what Verify would replay, and for how long.
    void setResult(const AdvisorResult *result);
    // Starts verifying candidate `index` of the current result on `backend`.
    void verify(std::size_t index, std::shared_ptr<Backend> backend);

signals:
    void verifyRequested(); // the button: the dock picks the candidate and the model
    void verificationFinished();

private:
    void showExpected();
    void showVerification(const AdvisorVerification &v);

    AdvisorSearch *m_search;
    std::optional<AdvisorResult> m_source; // the search whose candidates it verifies
    std::optional<AdvisorVerification> m_verification;
    QComboBox *m_window = nullptr;
    QPushButton *m_verify = nullptr;
    QLabel *m_expected = nullptr;
    QLabel *m_result = nullptr;
};

// "about 3 min 20 s".
QString aboutDuration(double seconds);

} // namespace bp::ui
