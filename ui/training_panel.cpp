#include "ui/training_panel.h"

#include "engine/backend/backend_factory.h"
#include "engine/model/tensor_core_alignment.h"
#include "ui/number_spin_box.h"
#include "ui/weights_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QRegularExpression>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QVBoxLayout>

namespace mantissa::ui {

namespace {

// "batch size 100 is ..." -> "Batch size 100 is ....": the engine's advice as a note of its own.
QString sentence(const std::string& advice)
{
    QString text = QString::fromStdString(advice);
    if (!text.isEmpty())
        text[0] = text[0].toUpper();
    return text + QLatin1Char('.');
}

} // namespace

TrainingPanel::TrainingPanel(ConfigDocument* document, QWidget* parent) : ConfigForm(document, parent)
{
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(buildTraining());
    layout->addWidget(buildOptimizer());
    layout->addWidget(buildSchedule());
    layout->addWidget(buildData());
    layout->addWidget(new WeightsPanel(document));
    layout->addStretch();
    reload();
}

QWidget* TrainingPanel::buildOptimizer()
{
    auto* box = new QGroupBox(tr("Optimizer"));
    auto* form = new QFormLayout(box);
    m_optimizer = addEnumCombo<OptimizerKind>(form, tr("Type"), "optimizer.type",
                                              [](RunConfig& c, OptimizerKind type) { c.optimizer.type = type; });
    m_lr = addNumber(form, tr("Learning rate"), "optimizer.lr", 1e-9, 100,
                     [](RunConfig& c, double v) { c.optimizer.lr = static_cast<float>(v); });
    m_lr->setMultiplicativeSteps(true);
    m_momentum = addNumber(form, tr("Momentum"), "optimizer.momentum", 0, 0.9999,
                           [](RunConfig& c, double v) { c.optimizer.momentum = static_cast<float>(v); });
    m_momentum->setSingleStep(0.05);
    m_nesterov = new QCheckBox(tr("Nesterov"));
    m_nesterov->setObjectName("optimizer.nesterov");
    connect(m_nesterov, &QCheckBox::toggled, this,
            [this](bool on) { edit("optimizer.nesterov", [on](RunConfig& c) { c.optimizer.nesterov = on; }); });
    form->addRow(QString(), m_nesterov);
    m_weightDecay = addNumber(form, tr("Weight decay"), "optimizer.weight_decay", 0, 1,
                              [](RunConfig& c, double v) { c.optimizer.weightDecay = static_cast<float>(v); });
    m_weightDecay->setSingleStep(1e-4);
    m_beta1 = addNumber(form, tr("β1"), "optimizer.beta1", 0, 0.9999,
                        [](RunConfig& c, double v) { c.optimizer.beta1 = static_cast<float>(v); });
    m_beta2 = addNumber(form, tr("β2"), "optimizer.beta2", 0, 0.999999,
                        [](RunConfig& c, double v) { c.optimizer.beta2 = static_cast<float>(v); });
    m_epsilon = addNumber(form, tr("ε"), "optimizer.epsilon", 1e-12, 1,
                          [](RunConfig& c, double v) { c.optimizer.epsilon = static_cast<float>(v); });
    m_epsilon->setMultiplicativeSteps(true);
    m_clip = addNumber(form, tr("Clip gradient norm (0 = off)"), "optimizer.grad_clip_norm", 0, 1e6,
                       [](RunConfig& c, double v) { c.optimizer.gradClipNorm = static_cast<float>(v); });
    return box;
}

QWidget* TrainingPanel::buildSchedule()
{
    auto* box = new QGroupBox(tr("Learning-rate schedule"));
    auto* form = new QFormLayout(box);
    m_schedule = addEnumCombo<ScheduleKind>(form, tr("Type"), "schedule.type",
                                            [](RunConfig& c, ScheduleKind type) { c.schedule.type = type; });
    m_milestones = new QLineEdit;
    m_milestones->setObjectName("schedule.milestones");
    m_milestones->setPlaceholderText(tr("epochs, e.g. 3, 6"));
    connect(m_milestones, &QLineEdit::editingFinished, this, [this] {
        std::vector<int> epochs;
        for (const QString& part : m_milestones->text().split(QRegularExpression("[,\\s]+"), Qt::SkipEmptyParts))
            if (const int e = part.toInt(); e > 0)
                epochs.push_back(e);
        edit("schedule.milestones", [&](RunConfig& c) { c.schedule.milestones = epochs; });
    });
    form->addRow(tr("Milestones"), m_milestones);
    m_gamma = addNumber(form, tr("γ at each milestone"), "schedule.gamma", 1e-6, 1,
                        [](RunConfig& c, double v) { c.schedule.gamma = static_cast<float>(v); });
    m_warmup = addInteger(form, tr("Warm-up steps"), "schedule.warmup_steps", 0, 10000000,
                          [](RunConfig& c, int v) { c.schedule.warmupSteps = v; });
    m_minLr = addNumber(form, tr("Cosine floor"), "schedule.min_lr", 0, 100,
                        [](RunConfig& c, double v) { c.schedule.minLr = static_cast<float>(v); });
    m_maxLr = addNumber(form, tr("One-cycle peak (0 = 10× lr)"), "schedule.max_lr", 0, 100,
                        [](RunConfig& c, double v) { c.schedule.maxLr = static_cast<float>(v); });
    m_pctStart = addNumber(form, tr("One-cycle rising fraction"), "schedule.pct_start", 0.01, 0.99,
                           [](RunConfig& c, double v) { c.schedule.pctStart = static_cast<float>(v); });
    m_pctStart->setSingleStep(0.05);
    return box;
}

QWidget* TrainingPanel::buildTraining()
{
    auto* box = new QGroupBox(tr("Training"));
    auto* form = new QFormLayout(box);
    m_batch = addInteger(form, tr("Batch size"), "training.batch_size", 1, 65536,
                         [](RunConfig& c, int v) { c.training.batchSize = v; });
    m_batchNote = new QLabel;
    m_batchNote->setObjectName("batchNote");
    m_batchNote->setWordWrap(true);
    m_batchNote->setStyleSheet("color: #8a5a00;");
    form->addRow(m_batchNote);
    m_epochs = addInteger(form, tr("Epochs"), "training.epochs", 1, 100000,
                          [](RunConfig& c, int v) { c.training.epochs = v; });
    m_maxSteps = addInteger(form, tr("Max steps (0 = no limit)"), "training.max_steps", 0, 100000000,
                            [](RunConfig& c, int v) { c.training.maxSteps = v; });
    m_seed = addInteger(form, tr("Seed"), "training.seed", 0, std::numeric_limits<int>::max(),
                        [](RunConfig& c, int v) { c.training.seed = static_cast<std::uint64_t>(v); });
    m_device = new QComboBox;
    m_device->setObjectName("training.device");
    fillDevices();
    connect(m_device, &QComboBox::currentIndexChanged, this, [this](int i) {
        const std::string device = m_device->itemData(i).toString().toStdString();
        edit("training.device", [&](RunConfig& c) { c.training.device = device; });
    });
    form->addRow(tr("Device"), m_device);
    m_threads = addInteger(form, tr("CPU threads (0 = automatic)"), "training.threads", 0, 1024,
                           [](RunConfig& c, int v) { c.training.threads = v; });
    m_threads->setToolTip(tr("0: the OMP_NUM_THREADS environment variable where set, else every core"));
    // The numerics lens (Numerics tab): per-layer statistics cost a pass over every tensor,
    // so they are sampled, not taken every step.
    m_numericsEvery = addInteger(form, tr("Statistics every N steps (0 = off)"), "numerics.every", 0, kMaxNumericsEvery,
                                 [](RunConfig& c, int v) { c.numerics.every = v; });
    return box;
}

QWidget* TrainingPanel::buildData()
{
    auto* box = new QGroupBox(tr("Data"));
    auto* form = new QFormLayout(box);
    m_dataset = addEnumCombo<DatasetKind>(form, tr("Dataset"), "data.dataset", [](RunConfig& c, DatasetKind kind) {
        c.data.dataset = kind;
        // Synthetic data takes its shape from the model, so a valid model trains.
        if (kind == DatasetKind::Synthetic) {
            c.data.syntheticShape = c.model.input;
            c.data.syntheticClasses = c.model.classes;
        }
    });
    m_directory = new QLineEdit;
    m_directory->setObjectName("data.directory");
    m_directory->setPlaceholderText(tr("default: $MANTISSA_DATA_DIR or /usr/share/datasets/<dataset>"));
    connect(m_directory, &QLineEdit::editingFinished, this, [this] {
        const std::string dir = m_directory->text().trimmed().toStdString();
        edit("data.directory", [&](RunConfig& c) { c.data.directory = dir; });
    });
    form->addRow(tr("Directory"), m_directory);
    m_limitTrain = addInteger(form, tr("Training samples (0 = all)"), "data.limit_train", 0, 100000000,
                              [](RunConfig& c, int v) { c.data.limitTrain = v; });
    m_limitTest = addInteger(form, tr("Test samples (0 = all)"), "data.limit_test", 0, 100000000,
                             [](RunConfig& c, int v) { c.data.limitTest = v; });
    m_validation = addNumber(form, tr("Validation fraction"), "data.validation_split", 0, 0.9,
                             [](RunConfig& c, double v) { c.data.validationSplit = static_cast<float>(v); });
    m_validation->setSingleStep(0.05);
    return box;
}

void TrainingPanel::fillDevices()
{
    m_device->addItem(tr("Automatic (GPU if available)"), "auto");
    m_device->addItem(tr("CPU"), "cpu");
    const GpuInventory gpus = listGpus();
    for (const GpuDevice& gpu : gpus.devices)
        m_device->addItem(tr("GPU %1: %2 (%3 GiB)")
                              .arg(gpu.index)
                              .arg(QString::fromStdString(gpu.name))
                              .arg(static_cast<double>(gpu.memoryBytes) / double(1 << 30), 0, 'f', 0),
                          QString("cuda:%1").arg(gpu.index));
    if (gpus.devices.empty()) {
        // Disabled rather than hidden, so users learn why there is no GPU to pick.
        m_device->addItem(tr("GPU (cuda:0) — %1").arg(QString::fromStdString(gpus.whyNone)), "cuda:0");
        auto* model = qobject_cast<QStandardItemModel*>(m_device->model());
        QStandardItem* item = model->item(model->rowCount() - 1);
        item->setEnabled(false);
        item->setToolTip(cudaBackendBuilt()
                             ? tr("No usable GPU: %1.").arg(QString::fromStdString(gpus.whyNone))
                             : tr("This build has no CUDA backend: configure with MANTISSA_WITH_CUDA=ON and a CUDA "
                                  "toolkit (docs/gpu.md)."));
    }
}

QString TrainingPanel::batchNote() const { return m_batchNote->text(); }

void TrainingPanel::load(const RunConfig& c)
{
    const OptimizerSpec& o = c.optimizer;
    setEnumComboValue(m_optimizer, o.type);
    m_lr->setValue(o.lr);
    m_momentum->setValue(o.momentum);
    m_nesterov->setChecked(o.nesterov);
    m_weightDecay->setValue(o.weightDecay);
    m_beta1->setValue(o.beta1);
    m_beta2->setValue(o.beta2);
    m_epsilon->setValue(o.epsilon);
    m_clip->setValue(o.gradClipNorm);
    const bool sgd = o.type == OptimizerKind::Sgd;
    m_momentum->setEnabled(sgd);
    m_nesterov->setEnabled(sgd);
    for (QWidget* w : std::initializer_list<QWidget*>{m_beta1, m_beta2, m_epsilon})
        w->setEnabled(!sgd);

    const ScheduleSpec& s = c.schedule;
    setEnumComboValue(m_schedule, s.type);
    QStringList milestones;
    for (int m : s.milestones)
        milestones << QString::number(m);
    m_milestones->setText(milestones.join(", "));
    m_gamma->setValue(s.gamma);
    m_warmup->setValue(static_cast<int>(s.warmupSteps));
    m_minLr->setValue(s.minLr);
    m_maxLr->setValue(s.maxLr);
    m_pctStart->setValue(s.pctStart);
    m_milestones->setEnabled(s.type == ScheduleKind::Step);
    m_gamma->setEnabled(s.type == ScheduleKind::Step);
    m_minLr->setEnabled(s.type == ScheduleKind::Cosine);
    m_maxLr->setEnabled(s.type == ScheduleKind::OneCycle);
    m_pctStart->setEnabled(s.type == ScheduleKind::OneCycle);

    const TrainingSpec& t = c.training;
    m_batch->setValue(static_cast<int>(t.batchSize));
    // The engine's verdict (model/tensor_core_alignment): only for runs with 16-bit GEMMs.
    const std::optional<MisalignedExtent> batch = tensorCoreAdvice(c).batch;
    m_batchNote->setText(batch ? sentence(batchAdvice(*batch)) : QString());
    m_batchNote->setVisible(!m_batchNote->text().isEmpty());
    m_epochs->setValue(t.epochs);
    m_maxSteps->setValue(static_cast<int>(t.maxSteps));
    m_seed->setValue(static_cast<int>(t.seed));
    const int device = m_device->findData(QString::fromStdString(t.device));
    m_device->setCurrentIndex(device >= 0 ? device : 0);
    m_threads->setValue(t.threads);
    m_numericsEvery->setValue(c.numerics.every);

    const DataSpec& d = c.data;
    setEnumComboValue(m_dataset, d.dataset);
    m_directory->setText(QString::fromStdString(d.directory));
    m_directory->setEnabled(d.dataset != DatasetKind::Synthetic);
    m_limitTrain->setValue(static_cast<int>(d.limitTrain));
    m_limitTest->setValue(static_cast<int>(d.limitTest));
    m_validation->setValue(d.validationSplit);
}

} // namespace mantissa::ui
