#include "ui/weights_panel.h"

#include <QDir>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

namespace mantissa::ui {

WeightsPanel::WeightsPanel(ConfigDocument* document, QWidget* parent)
    : ConfigForm(document, parent), m_initialWeights(new QLabel), m_fresh(new QPushButton(tr("Fresh weights")))
{
    auto* box = new QGroupBox(tr("Weights"));
    auto* form = new QFormLayout(box);
    m_initialWeights->setObjectName("initialWeights");
    m_initialWeights->setWordWrap(true);
    m_initialWeights->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_fresh->setObjectName("freshWeights");
    m_fresh->setToolTip(tr("Start from the seed's initial weights instead of a checkpoint"));
    connect(m_fresh, &QPushButton::clicked, this,
            [this] { edit("training.init_from", [](RunConfig& c) { c.training.initFrom.clear(); }); });
    auto* initial = new QVBoxLayout;
    initial->addWidget(m_initialWeights);
    initial->addWidget(m_fresh, 0, Qt::AlignLeft);
    form->addRow(tr("Initial weights"), initial);
    m_checkpointEvery = addField<QSpinBox>(form, "training.checkpoint_every_epochs");
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(box);
    reload();
}

void WeightsPanel::load(const RunConfig& config)
{
    const QString initFrom = QString::fromStdString(config.training.initFrom);
    m_initialWeights->setText(
        initFrom.isEmpty()
            ? tr("fresh, from the seed (Runs tab: “Start from its weights” fine-tunes a stored run)")
            : tr("checkpoint %1/%2").arg(QFileInfo(initFrom).dir().dirName(), QFileInfo(initFrom).fileName()));
    m_initialWeights->setToolTip(initFrom);
    m_fresh->setEnabled(!initFrom.isEmpty());
}

} // namespace mantissa::ui
