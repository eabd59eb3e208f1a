#include "ui/sweep_editor.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QToolButton>
#include <QVBoxLayout>

#include <nlohmann/json.hpp>

namespace mantissa::ui {

namespace {

using nlohmann::json;

struct AxisKindInfo {
    SweepEditor::AxisKind kind;
    const char* title;
    const char* specField; // the spec file's shorthand, or nullptr for "axes"
    const char* key;       // the config key the shorthand sweeps
    const char* example;
};

const AxisKindInfo kAxisKinds[] = {
    {SweepEditor::AxisKind::Precisions, QT_TRANSLATE_NOOP("SweepEditor", "precision modes"), "precisions",
     "precision.mode", "fp32, mixed-fp16"},
    {SweepEditor::AxisKind::LossScales, QT_TRANSLATE_NOOP("SweepEditor", "loss scales"), "loss_scales",
     "precision.loss_scale", "dynamic, 1024, none"},
    {SweepEditor::AxisKind::LearningRates, QT_TRANSLATE_NOOP("SweepEditor", "learning rates"), "learning_rates",
     "optimizer.lr", "0.1, 0.05"},
    {SweepEditor::AxisKind::BatchSizes, QT_TRANSLATE_NOOP("SweepEditor", "batch sizes"), "batch_sizes",
     "training.batch_size", "64, 128"},
    {SweepEditor::AxisKind::ConfigKey, QT_TRANSLATE_NOOP("SweepEditor", "config key"), nullptr, nullptr, "64, 128"},
};

// One typed value: JSON where it parses as JSON (numbers, true, "quoted"), else the text as a
// string, so that "fp32" and "dynamic" need no quotes.
json typedValue(const QString& text)
{
    const std::string trimmed = text.trimmed().toStdString();
    const json parsed = json::parse(trimmed, nullptr, false);
    return parsed.is_discarded() ? json(trimmed) : parsed;
}

json valueList(const QString& text)
{
    json list = json::array();
    for (const QString& item : text.split(u',', Qt::SkipEmptyParts))
        if (!item.trimmed().isEmpty())
            list.push_back(typedValue(item));
    return list;
}

enum Column { KindColumn, KeyColumn, ValuesColumn };

} // namespace

SweepEditor::SweepEditor(const RunConfig& base, QWidget* parent) : QDialog(parent), m_base(base)
{
    setWindowTitle(tr("Sweep"));
    setObjectName("sweepEditor");
    m_name = new QLineEdit(QString::fromStdString(base.name) + tr(" sweep"));
    m_name->setObjectName("sweepName");
    m_axes = new QTableWidget(0, 3);
    m_axes->setObjectName("sweepAxes");
    m_axes->setHorizontalHeaderLabels({tr("Axis"), tr("Config key (path)"), tr("Values (comma-separated)")});
    m_axes->horizontalHeader()->setSectionResizeMode(ValuesColumn, QHeaderView::Stretch);
    m_axes->verticalHeader()->hide();
    m_axes->setSelectionBehavior(QAbstractItemView::SelectRows);
    connect(m_axes, &QTableWidget::itemChanged, this, &SweepEditor::revalidate);

    auto* add = new QToolButton;
    add->setText(tr("Add axis"));
    add->setPopupMode(QToolButton::InstantPopup);
    auto* menu = new QMenu(add);
    for (const AxisKindInfo& info : kAxisKinds)
        menu->addAction(tr(info.title), this, [this, info] { addAxis(info.kind, QString::fromLatin1(info.example)); });
    add->setMenu(menu);
    auto* remove = new QPushButton(tr("Remove axis"));
    connect(remove, &QPushButton::clicked, this, &SweepEditor::removeSelectedAxis);
    auto* axisButtons = new QHBoxLayout;
    axisButtons->addWidget(add);
    axisButtons->addWidget(remove);
    axisButtons->addStretch(1);

    m_seeds = new QLineEdit(QStringLiteral("4"));
    m_seeds->setObjectName("sweepSeeds");
    m_seeds->setToolTip(tr("A count N (seeds 0 to N-1) or a list of seeds (0, 1, 2)"));
    m_jobs = new QSpinBox;
    m_jobs->setObjectName("sweepJobs");
    m_jobs->setRange(0, 256);
    m_jobs->setSpecialValueText(tr("one per core"));
    m_status = new QLabel;
    m_status->setObjectName("sweepStatus");
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    m_buttons->button(QDialogButtonBox::Ok)->setText(tr("Run sweep"));
    connect(m_buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(m_buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_name, &QLineEdit::textChanged, this, &SweepEditor::revalidate);
    connect(m_seeds, &QLineEdit::textChanged, this, &SweepEditor::revalidate);

    auto* form = new QFormLayout;
    form->addRow(tr("Name:"), m_name);
    form->addRow(tr("Base:"), new QLabel(tr("the config being edited (%1)").arg(QString::fromStdString(base.name))));
    form->addRow(tr("Seeds:"), m_seeds);
    form->addRow(tr("Runs at once:"), m_jobs);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(new QLabel(tr("<b>Axes</b>: every combination of their values is a configuration, run once "
                                    "per seed")));
    layout->addWidget(m_axes, 1);
    layout->addLayout(axisButtons);
    layout->addWidget(m_status);
    layout->addWidget(m_buttons);
    resize(720, 420);
    revalidate();
}

void SweepEditor::addAxis(AxisKind kind, const QString& values, const QString& key)
{
    const QSignalBlocker blocker(m_axes);
    const int row = m_axes->rowCount();
    m_axes->insertRow(row);
    auto* combo = new QComboBox;
    for (const AxisKindInfo& info : kAxisKinds)
        combo->addItem(tr(info.title), int(info.kind));
    combo->setCurrentIndex(combo->findData(int(kind)));
    connect(combo, &QComboBox::currentIndexChanged, this, &SweepEditor::revalidate);
    m_axes->setCellWidget(row, KindColumn, combo);
    m_axes->setItem(row, KeyColumn, new QTableWidgetItem(key));
    m_axes->setItem(row, ValuesColumn, new QTableWidgetItem(values));
    m_axes->resizeColumnToContents(KindColumn);
    revalidate();
}

void SweepEditor::setSeeds(const QString& seeds) { m_seeds->setText(seeds); }

void SweepEditor::setName(const QString& name) { m_name->setText(name); }

int SweepEditor::jobs() const { return m_jobs->value(); }

void SweepEditor::removeSelectedAxis()
{
    const int row = m_axes->currentRow();
    if (row >= 0)
        m_axes->removeRow(row);
    revalidate();
}

QString SweepEditor::specJson() const
{
    json spec = {{"name", m_name->text().toStdString()}, {"base", {{"config", json::parse(runConfigToJson(m_base))}}}};
    const QString seeds = m_seeds->text().trimmed();
    spec["seeds"] = seeds.contains(u',') ? valueList(seeds) : typedValue(seeds);
    json axes = json::array();
    for (int row = 0; row < m_axes->rowCount(); ++row) {
        const auto* combo = qobject_cast<QComboBox*>(m_axes->cellWidget(row, KindColumn));
        const auto kind = AxisKind(combo->currentData().toInt());
        const json values = valueList(m_axes->item(row, ValuesColumn)->text());
        for (const AxisKindInfo& info : kAxisKinds) {
            if (info.kind != kind || !info.specField)
                continue;
            if (spec.contains(info.specField)) // the spec's check then says "two axes sweep KEY"
                axes.push_back({{"key", info.key}, {"values", values}});
            else
                spec[info.specField] = values;
        }
        if (kind == AxisKind::ConfigKey)
            axes.push_back({{"key", m_axes->item(row, KeyColumn)->text().trimmed().toStdString()}, {"values", values}});
    }
    if (!axes.empty())
        spec["axes"] = axes;
    return QString::fromStdString(spec.dump(2));
}

std::optional<SweepSpec> SweepEditor::spec() const { return m_spec; }

void SweepEditor::revalidate()
{
    m_spec.reset();
    try {
        // The checks of a spec file: the same messages, naming the axis, key, value and run.
        SweepSpec spec = parseSweepSpec(specJson().toStdString(), "sweep", "");
        const SweepPlan plan = expandSweep(spec, "sweep");
        m_problem.clear();
        m_status->setStyleSheet({});
        m_status->setText(tr("%1 runs: %2 configurations × %3 seeds")
                              .arg(plan.runs.size())
                              .arg(plan.configurations.size())
                              .arg(spec.seeds.size()));
        m_spec = std::move(spec);
    } catch (const std::exception& e) {
        m_problem = QString::fromLocal8Bit(e.what());
        m_status->setStyleSheet(QStringLiteral("color: #b00020;"));
        m_status->setText(m_problem);
    }
    m_buttons->button(QDialogButtonBox::Ok)->setEnabled(m_spec.has_value());
}

} // namespace mantissa::ui
