#include "ui/precision_panel.h"

#include "engine/backend/cpu/cpu_kernel_plan.h"
#include "engine/optim/parameter_bytes.h"
#include "ui/number_spin_box.h"
#include "ui/recipe_panel.h"

#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QSpinBox>
#include <QVBoxLayout>

namespace mantissa::ui {

namespace {

// What the mode's compute type runs on on this machine's CPU, so that a user knows before
// training whether a speedup would be the hardware's (cpu_kernel_plan.h decides it).
QString kernelNote(const RunConfig& c)
{
    const DType compute = PrecisionPolicy(c.precision).layer().compute();
    if (compute == DType::F32 || c.training.device.rfind("cuda", 0) == 0)
        return {};
    const cpu::CpuKernelPlan plan = cpu::planCpuKernels(c.training.cpuKernels);
    const std::string& path = compute == DType::BF16 ? plan.bf16Path : plan.fp16Path;
    QString note =
        QObject::tr("On this CPU, %1 runs %2").arg(fromView(dtypeName(compute)), QString::fromStdString(path));
    try {
        cpu::requireNativeKernels(plan, compute);
    } catch (const Error& e) {
        note = QObject::tr("<b>Training will refuse to start:</b> %1")
                   .arg(QString::fromStdString(e.what()).toHtmlEscaped());
    }
    return note;
}

} // namespace

PrecisionPanel::PrecisionPanel(ConfigDocument* document, QWidget* parent) : ConfigForm(document, parent)
{
    auto* modeBox = new QGroupBox(tr("Precision"));
    auto* modeForm = new QFormLayout(modeBox);
    m_mode = addField<QComboBox>(modeForm, "precision.mode");
    m_modeNote = new QLabel;
    m_modeNote->setWordWrap(true);
    modeForm->addRow(m_modeNote);
    m_cpuKernels = addField<QComboBox>(modeForm, "training.cpu_kernels");
    m_kernelNote = new QLabel;
    m_kernelNote->setObjectName("precision.kernel_note");
    m_kernelNote->setWordWrap(true);
    modeForm->addRow(m_kernelNote);

    auto* updateBox = new QGroupBox(tr("Master weights and optimizer state"));
    auto* updateForm = new QFormLayout(updateBox);
    addField<QComboBox>(updateForm, "precision.master_weights");
    addField<QComboBox>(updateForm, "precision.optimizer_state");
    m_updateNote = new QLabel;
    m_updateNote->setObjectName("precision.update_note");
    m_updateNote->setWordWrap(true);
    updateForm->addRow(m_updateNote);

    m_recipe = new RecipePanel(document);

    auto* scaleBox = new QGroupBox(tr("Loss scaling"));
    auto* form = new QFormLayout(scaleBox);
    m_scaleType = addField<QComboBox>(form, "precision.loss_scale.type");
    m_scaleNote = new QLabel;
    m_scaleNote->setWordWrap(true);
    form->addRow(m_scaleNote);
    m_static = addField<NumberSpinBox>(form, "precision.loss_scale.value");
    m_initial = addField<NumberSpinBox>(form, "precision.loss_scale.initial");
    m_growth = addField<NumberSpinBox>(form, "precision.loss_scale.growth_factor");
    m_backoff = addField<NumberSpinBox>(form, "precision.loss_scale.backoff_factor");
    m_interval = addField<QSpinBox>(form, "precision.loss_scale.growth_interval");
    m_hysteresis = addField<QSpinBox>(form, "precision.loss_scale.hysteresis");
    m_min = addField<NumberSpinBox>(form, "precision.loss_scale.min");
    m_max = addField<NumberSpinBox>(form, "precision.loss_scale.max");
    for (NumberSpinBox* s : {m_static, m_initial, m_min, m_max})
        s->setMultiplicativeSteps(true); // scales live on powers of two
    m_growth->setSingleStep(0.5);
    m_backoff->setSingleStep(0.05);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(modeBox);
    layout->addWidget(updateBox);
    layout->addWidget(m_recipe);
    layout->addWidget(scaleBox);
    layout->addStretch();
    reload();
}

void PrecisionPanel::load(const RunConfig& c)
{
    QString modeNote = fromView(enumEntry(c.precision).description);
    if (c.update != UpdatePrecision{})
        modeNote += tr(" Its master weights and optimizer state are overridden below.");
    m_modeNote->setText(modeNote);
    m_kernelNote->setText(kernelNote(c));
    m_updateNote->setText(tr("%1\nPer parameter: %2")
                              .arg(fromView(enumEntry(c.update.masters).description),
                                   QString::fromStdString(parameterBytesText(parameterBytes(c)))));
    const LossScaleSpec& ls = c.lossScale;
    const LossScaleType type = PrecisionPolicy(c.precision).resolveLossScale(ls.type);
    if (ls.type == LossScaleType::Auto) {
        m_scaleNote->setText(tr("auto: %1 for %2").arg(fromView(enumKey(type)), fromView(enumKey(c.precision))));
    } else {
        m_scaleNote->setText(c.precision == PrecisionMode::Fp32 && type != LossScaleType::None
                                 ? tr("fp32 gradients do not underflow; scaling only costs a multiply")
                                 : QString());
    }
    m_scaleNote->setVisible(!m_scaleNote->text().isEmpty());
    m_static->setEnabled(type == LossScaleType::Static);
    for (QWidget* w :
         std::initializer_list<QWidget*>{m_initial, m_growth, m_backoff, m_interval, m_hysteresis, m_min, m_max})
        w->setEnabled(type == LossScaleType::Dynamic);
}

} // namespace mantissa::ui
