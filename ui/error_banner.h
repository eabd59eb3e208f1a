#pragma once
// An inline banner above the workbench for errors a user can act on (a missing dataset,
// a diverged run): it stays until dismissed, unlike a status message, and does not block
// the window like a modal dialog would while a comparison's next run trains.
#include <QFrame>

class QLabel;

namespace mantissa::ui {

class ErrorBanner : public QFrame {
    Q_OBJECT
public:
    explicit ErrorBanner(QWidget* parent = nullptr);

    void showError(const QString& title, const QString& message);
    QString text() const;

signals:
    // Every error shown, for a host listening through WorkbenchWidget::errorReported.
    void shown(const QString& title, const QString& message);

private:
    QLabel* m_label;
};

} // namespace mantissa::ui
