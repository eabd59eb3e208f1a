#include "ui/error_banner.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QToolButton>

namespace mantissa::ui {

ErrorBanner::ErrorBanner(QWidget* parent) : QFrame(parent), m_label(new QLabel)
{
    setObjectName("errorBanner");
    setStyleSheet("#errorBanner { background: #fde7e9; border: 1px solid #e0a0a6; border-radius: 3px; }");
    m_label->setWordWrap(true);
    m_label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* close = new QToolButton;
    close->setText(tr("Dismiss"));
    connect(close, &QToolButton::clicked, this, &QWidget::hide);
    auto* layout = new QHBoxLayout(this);
    layout->addWidget(m_label, 1);
    layout->addWidget(close, 0, Qt::AlignTop);
    hide();
}

void ErrorBanner::showError(const QString& title, const QString& message)
{
    m_label->setText(QString("<b>%1</b><br>%2").arg(title.toHtmlEscaped(), message.toHtmlEscaped()));
    show();
    emit shown(title, message);
}

QString ErrorBanner::text() const { return m_label->text(); }

} // namespace mantissa::ui
