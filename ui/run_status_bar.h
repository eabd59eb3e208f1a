#pragma once
// The workbench's status line: messages on the left; a progress bar with ETA and
// throughput on the right while a run trains.
#include <QStatusBar>

class QLabel;
class QProgressBar;

namespace mantissa::ui {

class RunStatusBar : public QStatusBar {
    Q_OBJECT
public:
    explicit RunStatusBar(QWidget* parent = nullptr);

    // `elapsedSeconds` is training time so far; the ETA extrapolates its rate per step.
    void showProgress(std::int64_t step, std::int64_t totalSteps, double samplesPerSecond, double elapsedSeconds);
    void showLoading(const QString& what);
    // A sweep: runs done of `total`, and the runner's "done 3/8, running 2, failed 0, ETA 1:05".
    void showSweepProgress(int done, int total, const QString& text);
    void hideProgress();
    QString progressText() const;
    QProgressBar* progressBar() const { return m_progress; }

private:
    QProgressBar* m_progress;
    QLabel* m_rate;
};

// "1:05" or "1:02:03"
QString formatDuration(double seconds);

} // namespace mantissa::ui
