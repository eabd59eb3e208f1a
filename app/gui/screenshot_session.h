#pragma once
// `mantissa --screenshot DIR`: trains a short run and a precision comparison in the real
// window and saves grabs of it (during the run, after it, and the comparison) as PNGs, so
// the documentation's screenshots come from the program itself and can be regenerated.
#include "engine/config/run_config.h"

#include <QObject>
#include <QString>
#include <QStringList>
#include <QTemporaryDir>

#include <optional>

namespace mantissa::gui {

class MainWindow;

struct ScreenshotOptions {
    QString directory;
    QString database; // empty: a temporary file
    QString preset = "mlp";
    QString comparePreset = "mlp";
    int steps = 120;
    int limitTrain = 4096, limitTest = 1000;
    // Only the Numerics tab: the preset in mixed-fp16 with statistics, grabbed as numerics.png.
    bool numericsOnly = false;
    // With numericsOnly: this precision mode instead (one run, grabbed as numerics-<mode>.png);
    // a sub-16-bit recipe's grab shows the GEMM inputs' block statistics.
    std::optional<PrecisionMode> numericsPrecision;
    // Only a Compare precisions over these modes (keys), grabbed as comparison-recipes.png.
    QStringList compareModes;
    // Only File > Import model… of this ONNX file, trained on synthetic data of its shape in
    // `importPrecision`, grabbed with its Model tab as onnx-import.png.
    QString importModel;
    PrecisionMode importPrecision = PrecisionMode::Mxfp8;
};

class ScreenshotSession : public QObject {
    Q_OBJECT
public:
    ScreenshotSession(MainWindow* window, ScreenshotOptions options);
    void start();

private:
    void configure(const QString& preset);
    void startNumerics();
    void startRecipeNumerics(PrecisionMode precision);
    void startNumericsRun(PrecisionMode precision);
    void startRecipeComparison();
    void startImportedModel();
    void grab(const QString& name);
    void onTick();

    MainWindow* m_window;
    ScreenshotOptions m_options;
    bool m_grabbedRunning = false;
    int m_phase = 0; // 0: single run, 1: comparison (--numerics: 0 mixed-fp16, 1 fp16)
    QTemporaryDir m_scratch;
};

} // namespace mantissa::gui
