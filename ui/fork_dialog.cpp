#include "ui/fork_dialog.h"

#include "engine/train/fork_compatibility.h"
#include "ui/config_document.h"
#include "ui/config_form.h"
#include "ui/number_spin_box.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace mantissa::ui {

namespace {

// The fields' editors, bound to the dialog's own document (its undo stack is never shown).
class ForkSettingsForm : public ConfigForm {
public:
    ForkSettingsForm(ConfigDocument* document, const std::vector<std::string_view>& paths) : ConfigForm(document)
    {
        auto* form = new QFormLayout(this);
        form->setContentsMargins(0, 0, 0, 0);
        for (std::string_view path : paths)
            addField(form, path);
        reload();
    }

protected:
    void load(const RunConfig&) override {}
};

struct FieldGroup {
    const char* title;
    std::vector<std::string_view> paths;
};

// The changes a fork is for: another recipe or precision mode, other master weights or moments,
// another learning rate (the schedule's base) from the saved state on. The precision's three
// under one title, as on the Precision tab ("Mode" alone would not say which).
const std::vector<FieldGroup>& fieldGroups()
{
    static const std::vector<FieldGroup> groups{
        {QT_TR_NOOP("Precision"), {"precision.mode", "precision.master_weights", "precision.optimizer_state"}},
        {QT_TR_NOOP("Optimizer"), {"optimizer.lr"}},
    };
    return groups;
}

} // namespace

const std::vector<std::string_view>& ForkDialog::fields()
{
    static const std::vector<std::string_view> paths = [] {
        std::vector<std::string_view> all;
        for (const FieldGroup& group : fieldGroups())
            all.insert(all.end(), group.paths.begin(), group.paths.end());
        return all;
    }();
    return paths;
}

ForkDialog::ForkDialog(RunConfig parentConfig, const QString& heading, QWidget* parent)
    : QDialog(parent), m_parentConfig(std::move(parentConfig)), m_document(new ConfigDocument(this))
{
    setWindowTitle(tr("Fork run"));
    m_document->load(m_parentConfig, tr("The parent's config"));
    auto* label = new QLabel(heading);
    label->setObjectName(QStringLiteral("forkHeading"));
    label->setWordWrap(true);
    QList<QGroupBox*> groups;
    for (const FieldGroup& group : fieldGroups()) {
        groups << new QGroupBox(tr(group.title));
        (new QVBoxLayout(groups.back()))->addWidget(new ForkSettingsForm(m_document, group.paths));
    }
    m_name = new QLineEdit;
    m_name->setObjectName(QStringLiteral("forkName"));
    m_name->setPlaceholderText(tr("generated"));
    auto* nameRow = new QFormLayout;
    nameRow->setContentsMargins(0, 0, 0, 0);
    nameRow->addRow(tr("Name"), m_name);
    auto* note = new QLabel(tr("Unchanged, the fork continues bit for bit as the run did. The weights, optimizer "
                               "state, loss scaler and place in the data order carry over; a changed precision "
                               "starts its own loss scaler and scaling history. The model's shape cannot change."));
    note->setWordWrap(true);
    m_problem = new QLabel;
    m_problem->setObjectName(QStringLiteral("forkProblem"));
    m_problem->setWordWrap(true);
    m_problem->setStyleSheet(QStringLiteral("color: #b00020;"));
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    m_start = buttons->button(QDialogButtonBox::Ok);
    m_start->setText(tr("Start fork"));
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(label);
    for (QGroupBox* group : groups)
        layout->addWidget(group);
    layout->addLayout(nameRow);
    layout->addWidget(note);
    layout->addWidget(m_problem);
    layout->addWidget(buttons);
    connect(m_document, &ConfigDocument::changed, this, &ForkDialog::check);
    check();
}

void ForkDialog::check()
{
    // The engine's rules, asked: those of any run, then a fork's own.
    m_problemText = m_document->runBlocker();
    if (m_problemText.isEmpty())
        if (const std::optional<std::string> change = forkShapeChange(m_parentConfig, m_document->config()))
            m_problemText = QString::fromStdString(*change);
    m_problem->setText(m_problemText);
    m_problem->setVisible(!m_problemText.isEmpty());
    m_start->setEnabled(m_problemText.isEmpty());
}

void ForkDialog::setConfig(const RunConfig& config) { m_document->apply(config, tr("Change the fork")); }

RunConfig ForkDialog::config() const { return m_document->config(); }

QString ForkDialog::runName() const { return m_name->text().trimmed(); }

QWidget* ForkDialog::fieldEditor(std::string_view path) const
{
    return findChild<QWidget*>(QString::fromUtf8(path.data(), static_cast<qsizetype>(path.size())));
}

QComboBox* ForkDialog::precisionBox() const { return qobject_cast<QComboBox*>(fieldEditor("precision.mode")); }

QComboBox* ForkDialog::masterWeightsBox() const
{
    return qobject_cast<QComboBox*>(fieldEditor("precision.master_weights"));
}

QComboBox* ForkDialog::optimizerStateBox() const
{
    return qobject_cast<QComboBox*>(fieldEditor("precision.optimizer_state"));
}

NumberSpinBox* ForkDialog::learningRateBox() const { return qobject_cast<NumberSpinBox*>(fieldEditor("optimizer.lr")); }

} // namespace mantissa::ui
