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
    m_optimizer = addField<QComboBox>(form, "optimizer.type");
    m_lr = addField<NumberSpinBox>(form, "optimizer.lr");
    m_lr->setMultiplicativeSteps(true);
    m_momentum = addField<NumberSpinBox>(form, "optimizer.momentum");
    m_momentum->setSingleStep(0.05);
    m_nesterov = addField<QCheckBox>(form, "optimizer.nesterov");
    m_weightDecay = addField<NumberSpinBox>(form, "optimizer.weight_decay");
    m_weightDecay->setSingleStep(1e-4);
    m_beta1 = addField<NumberSpinBox>(form, "optimizer.beta1");
    m_beta2 = addField<NumberSpinBox>(form, "optimizer.beta2");
    m_epsilon = addField<NumberSpinBox>(form, "optimizer.epsilon");
    m_epsilon->setMultiplicativeSteps(true);
    m_clip = addField<NumberSpinBox>(form, "optimizer.grad_clip_norm");
    return box;
}

QWidget* TrainingPanel::buildSchedule()
{
    auto* box = new QGroupBox(tr("Learning-rate schedule"));
    auto* form = new QFormLayout(box);
    m_schedule = addField<QComboBox>(form, "schedule.type");
    m_milestones = addField<QLineEdit>(form, "schedule.milestones");
    m_milestones->setPlaceholderText(tr("epochs, e.g. 3, 6"));
    m_gamma = addField<NumberSpinBox>(form, "schedule.gamma");
    m_warmup = addField<QSpinBox>(form, "schedule.warmup_steps");
    m_minLr = addField<NumberSpinBox>(form, "schedule.min_lr");
    m_maxLr = addField<NumberSpinBox>(form, "schedule.max_lr");
    m_pctStart = addField<NumberSpinBox>(form, "schedule.pct_start");
    m_pctStart->setSingleStep(0.05);
    return box;
}

QWidget* TrainingPanel::buildTraining()
{
    auto* box = new QGroupBox(tr("Training"));
    auto* form = new QFormLayout(box);
    m_batch = addField<QSpinBox>(form, "training.batch_size");
    m_batchNote = new QLabel;
    m_batchNote->setObjectName("batchNote");
    m_batchNote->setWordWrap(true);
    m_batchNote->setStyleSheet("color: #8a5a00;");
    form->addRow(m_batchNote);
    m_epochs = addField<QSpinBox>(form, "training.epochs");
    m_maxSteps = addField<QSpinBox>(form, "training.max_steps");
    m_seed = addField<QSpinBox>(form, "training.seed");
    // The devices this machine has, not the field's free text: a combo of its own.
    m_device = new QComboBox;
    m_device->setObjectName("training.device");
    m_device->setToolTip(fromView(runConfigField("training.device").description));
    fillDevices();
    connect(m_device, &QComboBox::currentIndexChanged, this, [this](int i) {
        const std::string device = m_device->itemData(i).toString().toStdString();
        edit("training.device", [&](RunConfig& c) { c.training.device = device; });
    });
    form->addRow(fromView(runConfigField("training.device").label), m_device);
    m_threads = addField<QSpinBox>(form, "training.threads");
    // The numerics lens (Numerics tab): per-layer statistics cost a pass over every tensor,
    // so they are sampled, not taken every step.
    m_numericsEvery = addField<QSpinBox>(form, "numerics.every");
    // The shadow error track: an fp32 forward and backward beside the step, so sampled too.
    m_shadowEvery = addField<QSpinBox>(form, "numerics.shadow_every");
    return box;
}

QWidget* TrainingPanel::buildData()
{
    auto* box = new QGroupBox(tr("Data"));
    auto* form = new QFormLayout(box);
    // Not a plain field: choosing synthetic data also gives it the model's shape.
    m_dataset = addEnumCombo<DatasetKind>(form, fromView(runConfigField("data.dataset").label), "data.dataset",
                                          [](RunConfig& c, DatasetKind kind) {
                                              c.data.dataset = kind;
                                              // Synthetic data takes its shape from the model, so a valid model trains.
                                              if (kind == DatasetKind::Synthetic) {
                                                  c.data.syntheticShape = c.model.input;
                                                  c.data.syntheticClasses = c.model.classes;
                                              }
                                          });
    m_dataset->setToolTip(fromView(runConfigField("data.dataset").description));
    m_directory = addField<QLineEdit>(form, "data.directory");
    m_directory->setPlaceholderText(tr("default: $MANTISSA_DATA_DIR or /usr/share/datasets/<dataset>"));
    // Your own files: the path and how it is read (docs/data.md); shown for that dataset only.
    m_path = addField<QLineEdit>(form, "data.path");
    m_path->setPlaceholderText(tr("an image folder, a .csv or .tsv table, .npy or .npz arrays, or IDX files"));
    m_format = addField<QComboBox>(form, "data.format");
    m_limitTrain = addField<QSpinBox>(form, "data.limit_train");
    m_limitTest = addField<QSpinBox>(form, "data.limit_test");
    m_validation = addField<NumberSpinBox>(form, "data.validation_split");
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
    // The fields' values are shown by ConfigForm::reload; here only what follows from them.
    const OptimizerSpec& o = c.optimizer;
    const bool sgd = o.type == OptimizerKind::Sgd;
    m_momentum->setEnabled(sgd);
    m_nesterov->setEnabled(sgd);
    for (QWidget* w : std::initializer_list<QWidget*>{m_beta1, m_beta2, m_epsilon})
        w->setEnabled(!sgd);

    const ScheduleSpec& s = c.schedule;
    m_milestones->setEnabled(s.type == ScheduleKind::Step);
    m_gamma->setEnabled(s.type == ScheduleKind::Step);
    m_minLr->setEnabled(s.type == ScheduleKind::Cosine);
    m_maxLr->setEnabled(s.type == ScheduleKind::OneCycle);
    m_pctStart->setEnabled(s.type == ScheduleKind::OneCycle);

    // The engine's verdict (model/tensor_core_alignment): only for runs with 16-bit GEMMs.
    const std::optional<MisalignedExtent> batch = tensorCoreAdvice(c).batch;
    m_batchNote->setText(batch ? sentence(batchAdvice(*batch)) : QString());
    m_batchNote->setVisible(!m_batchNote->text().isEmpty());
    const int device = m_device->findData(QString::fromStdString(c.training.device));
    m_device->setCurrentIndex(device >= 0 ? device : 0);

    setEnumComboValue(m_dataset, c.data.dataset);
    const bool files = c.data.dataset == DatasetKind::Files;
    m_directory->setEnabled(c.data.dataset != DatasetKind::Synthetic && !files);
    m_path->setEnabled(files);
    m_format->setEnabled(files);
}

} // namespace mantissa::ui
