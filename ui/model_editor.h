#pragma once
// The model editor: the layer table (a tree: composite blocks expand into their parts), the
// buttons that add, remove, duplicate and move layers, the validator's message under the
// table, and the model's totals.
#include "engine/config/layer_kind.h"

#include <QWidget>

class QLabel;
class QTreeView;
class QToolButton;

namespace mantissa::ui {

class ConfigDocument;
class LayerTableModel;

class ModelEditor : public QWidget {
    Q_OBJECT
public:
    explicit ModelEditor(ConfigDocument* document, QWidget* parent = nullptr);

    LayerTableModel* tableModel() const { return m_model; }
    QTreeView* tableView() const { return m_view; }
    // The validator's message (empty while the model is valid) as shown under the table.
    QString messageText() const;

private:
    void addLayer(LayerKind type);
    void removeLayer();
    void duplicateLayer();
    void moveLayer(int delta);
    // The top-level layer selected (a part's block when a part is), -1 when none.
    int currentRow() const;
    void selectRow(int row);
    void refresh();
    void showRejection(const QString& message);

    ConfigDocument* m_document;
    LayerTableModel* m_model;
    QTreeView* m_view;
    QLabel* m_message;
    QLabel* m_totals;
    QToolButton* m_remove;
    QToolButton* m_duplicate;
    QToolButton* m_up;
    QToolButton* m_down;
};

} // namespace mantissa::ui
