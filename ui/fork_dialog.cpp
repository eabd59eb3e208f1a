#include "ui/fork_dialog.h"

#include "ui/enum_combo.h"
#include "ui/number_spin_box.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace mantissa::ui {

ForkDialog::ForkDialog(RunConfig parentConfig, const QString& heading, QWidget* parent)
    : QDialog(parent), m_parentConfig(std::move(parentConfig))
{
    setWindowTitle(tr("Fork run"));
    auto* label = new QLabel(heading);
    label->setObjectName(QStringLiteral("forkHeading"));
    label->setWordWrap(true);
    m_precision = new QComboBox;
    m_precision->setObjectName(QStringLiteral("forkPrecision"));
    fillEnumCombo<PrecisionMode>(m_precision);
    setEnumComboValue(m_precision, m_parentConfig.precision);
    m_learningRate = new NumberSpinBox(1e-9, 1e3);
    m_learningRate->setObjectName(QStringLiteral("forkLearningRate"));
    m_learningRate->setValue(m_parentConfig.optimizer.lr);
    m_name = new QLineEdit;
    m_name->setObjectName(QStringLiteral("forkName"));
    m_name->setPlaceholderText(tr("generated"));
    auto* note = new QLabel(tr("Unchanged, the fork continues bit for bit as the run did. The weights, optimizer "
                               "state, loss scaler and place in the data order carry over; a changed precision "
                               "starts its own loss scaler and scaling history."));
    note->setWordWrap(true);
    auto* form = new QFormLayout;
    form->addRow(tr("Precision:"), m_precision);
    form->addRow(tr("Learning rate:"), m_learningRate);
    form->addRow(tr("Name:"), m_name);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Start fork"));
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(label);
    layout->addLayout(form);
    layout->addWidget(note);
    layout->addWidget(buttons);
}

RunConfig ForkDialog::config() const
{
    RunConfig config = m_parentConfig;
    config.precision = enumComboValue<PrecisionMode>(m_precision, m_precision->currentIndex());
    config.optimizer.lr = static_cast<float>(m_learningRate->value());
    return config;
}

QString ForkDialog::runName() const { return m_name->text().trimmed(); }

} // namespace mantissa::ui
