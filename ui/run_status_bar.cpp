#include "ui/run_status_bar.h"

#include "engine/util/format_number.h"
#include <QLabel>
#include <QLocale>

#include <QProgressBar>

#include <cmath>

namespace mantissa::ui {

QString formatDuration(double seconds)
{
    return QString::fromStdString(mantissa::formatDuration(std::max(0.0, seconds)));
}

RunStatusBar::RunStatusBar(QWidget* parent) : QStatusBar(parent), m_progress(new QProgressBar), m_rate(new QLabel)
{
    m_progress->setObjectName("runProgress");
    m_progress->setMaximumWidth(220);
    m_progress->setTextVisible(true);
    m_rate->setObjectName("runRate");
    addPermanentWidget(m_rate);
    addPermanentWidget(m_progress);
    setSizeGripEnabled(false);
    hideProgress();
}

void RunStatusBar::showLoading(const QString& what)
{
    m_progress->setRange(0, 0); // busy indicator until the step count is known
    m_progress->show();
    m_rate->setText(what);
    m_rate->show();
}

void RunStatusBar::showProgress(std::int64_t step, std::int64_t totalSteps, double samplesPerSecond,
                                double elapsedSeconds)
{
    m_progress->setRange(0, static_cast<int>(std::max<std::int64_t>(1, totalSteps)));
    m_progress->setValue(static_cast<int>(std::min(step, totalSteps)));
    m_progress->setFormat(QString("%1 / %2").arg(step).arg(totalSteps));
    m_progress->show();
    QString eta = "—";
    if (step > 0 && totalSteps > step)
        eta = formatDuration(elapsedSeconds / static_cast<double>(step) * static_cast<double>(totalSteps - step));
    else if (step >= totalSteps)
        eta = tr("evaluating");
    m_rate->setText(tr("%1 samples/s · ETA %2")
                        .arg(QLocale().toString(static_cast<qlonglong>(std::llround(samplesPerSecond))), eta));
    m_rate->show();
}

void RunStatusBar::showSweepProgress(int done, int total, const QString& text)
{
    m_progress->setRange(0, std::max(1, total));
    m_progress->setValue(std::min(done, total));
    m_progress->setFormat(tr("%1 / %2 runs").arg(done).arg(total));
    m_progress->show();
    m_rate->setText(text);
    m_rate->show();
}

void RunStatusBar::hideProgress()
{
    m_progress->hide();
    m_rate->hide();
}

QString RunStatusBar::progressText() const { return m_rate->text(); }

} // namespace mantissa::ui
