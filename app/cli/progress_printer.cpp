#include "cli/progress_printer.h"

#include "engine/observe/bits_per_character.h"

#include "engine/util/format_number.h"

#include <cmath>
#include <string>

namespace mantissa::cli {

namespace {

// A duration, "--:--" while not known (an ETA before the first steps).
std::string durationOrDashes(double seconds)
{
    const std::string text = formatDuration(seconds);
    return text.empty() ? "--:--" : text;
}

std::string formatFixed(double value, int decimals)
{
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
    return buffer;
}

} // namespace

ProgressPrinter::ProgressPrinter(std::int64_t totalSteps, bool interactive, std::FILE* out)
    : m_totalSteps(totalSteps), m_interactive(interactive), m_out(out)
{}

void ProgressPrinter::onStep(const StepRecord& record)
{
    if (std::isfinite(record.loss))
        m_smoothedLoss = m_smoothedLoss == 0 ? record.loss : 0.95f * m_smoothedLoss + 0.05f * record.loss;
    const auto now = std::chrono::steady_clock::now();
    // Redraw at most ten times a second: a terminal is slower than a training step.
    if (m_interactive && (now - m_lastDraw > std::chrono::milliseconds(100) || record.step == m_totalSteps)) {
        m_lastDraw = now;
        drawBar(record);
    }
}

void ProgressPrinter::drawBar(const StepRecord& r)
{
    const double fraction = m_totalSteps > 0 ? static_cast<double>(r.step) / static_cast<double>(m_totalSteps) : 0;
    constexpr int width = 28;
    const int filled = static_cast<int>(fraction * width);
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar.append(static_cast<std::size_t>(width - filled), '.');
    const double eta =
        r.step > 0 ? r.elapsedSeconds / static_cast<double>(r.step) * static_cast<double>(m_totalSteps - r.step) : NAN;
    std::fprintf(m_out, "\r\033[K[%s] %3.0f%% step %lld/%lld  epoch %d  loss %.4f  scale %s  %.0f samples/s  ETA %s",
                 bar.c_str(), fraction * 100, static_cast<long long>(r.step), static_cast<long long>(m_totalSteps),
                 r.epoch, m_smoothedLoss, formatScale(r.lossScale).c_str(), r.samplesPerSecond,
                 durationOrDashes(eta).c_str());
    std::fflush(m_out);
    m_barVisible = true;
}

void ProgressPrinter::clearBar()
{
    if (m_barVisible) {
        std::fprintf(m_out, "\r\033[K");
        m_barVisible = false;
    }
}

void ProgressPrinter::onEpoch(const EpochRecord& r)
{
    clearBar();
    if (std::isfinite(r.validationLoss))
        std::fprintf(
            m_out, "epoch %d: validation loss %.4f, validation %s %s\n", r.epoch, r.validationLoss,
            taskMetricName(m_metric),
            formatTaskMetric(m_metric, taskMetricValue(m_metric, r.validationLoss, r.validationAccuracy)).c_str());
    if (m_metric == TaskMetric::Rmse) {
        std::fprintf(m_out, "epoch %d: train loss %.4f, test loss %.4f, test RMSE %s (%s)\n", r.epoch, r.trainLoss,
                     r.testLoss, formatTaskMetric(m_metric, taskMetricValue(m_metric, r.testLoss, NAN)).c_str(),
                     durationOrDashes(r.wallSeconds).c_str());
        std::fflush(m_out);
        return;
    }
    const std::string bits = m_metric == TaskMetric::BitsPerCharacter
                                 ? " (" + formatFixed(bitsPerCharacter(r.testLoss), 3) + " bits per character)"
                                 : "";
    std::fprintf(m_out,
                 "epoch %d: train loss %.4f, train accuracy %.2f%%, test loss %.4f%s, test accuracy %.2f%% (%s)\n",
                 r.epoch, r.trainLoss, r.trainAccuracy * 100, r.testLoss, bits.c_str(), r.testAccuracy * 100,
                 durationOrDashes(r.wallSeconds).c_str());
    std::fflush(m_out);
}

void ProgressPrinter::onEvent(const EventRecord& e)
{
    if (e.kind == EventKind::Overflow) {
        // Overflow storms are common at the start of fp16 training; print the first few only.
        if (++m_overflows <= 5) {
            clearBar();
            std::fprintf(m_out, "step %lld: non-finite gradient in %s; step skipped, loss scale %s -> %s\n",
                         static_cast<long long>(e.step), e.parameter.c_str(), formatScale(e.scaleBefore).c_str(),
                         formatScale(e.scaleAfter).c_str());
        } else if (m_overflows == 6) {
            clearBar();
            std::fprintf(m_out, "(further overflow steps are counted in the summary)\n");
        }
    } else if (e.kind == EventKind::Divergence || e.kind == EventKind::Error) {
        clearBar();
        std::fprintf(m_out, "%s at step %lld: %s\n", eventKindName(e.kind), static_cast<long long>(e.step),
                     e.message.c_str());
    }
    std::fflush(m_out);
}

void ProgressPrinter::finish() { clearBar(); }

} // namespace mantissa::cli
