#pragma once
// The Data tab: what the run will train on, seen before training. A file or folder picker sets
// the config's data source (as --data does); reading it shows a preview (a grid of images with
// their labels, the first rows of a table, or a sample of text), the classes' histogram, the
// range of each channel or feature, the size in memory, the fingerprint and the problems found
// (engine/data/data_summary.h, the figures `mantissa-cli data` prints), or the message naming
// the file and the place where the data cannot be read.
#include "engine/data/data_summary.h"

#include <QString>
#include <QStringList>
#include <QVector>
#include <QWidget>

class QComboBox;
class QGridLayout;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QStackedWidget;
class QTableWidget;

namespace mantissa::ui {

class ConfigDocument;
class PlotWidget;

class DataPanel : public QWidget {
    Q_OBJECT
public:
    explicit DataPanel(ConfigDocument* document, QWidget* parent = nullptr);

    // Points the config at `path` (a file or folder, read as its format says) and reads it.
    void useSource(const QString& path);
    // Reads the data the config names and shows what it holds, or why it cannot be read.
    void inspect();

    // What is shown, for tests and the screenshot.
    QString message() const;           // the error, or "" when the data was read
    QString summaryText() const;       // source, format, samples, shape, classes, memory, fingerprint
    QStringList previewLabels() const; // the captions of the image grid
    QTableWidget* rowsTable() const { return m_rows; }
    QTableWidget* rangesTable() const { return m_ranges; }
    QString textSample() const;
    QVector<double> histogram() const; // training samples per class, as plotted
    QStringList problems() const;

private:
    void showSummary(const DatasetSplits& splits, const DataSummary& summary);
    void showImages(const DatasetSplits& splits);
    void showRows(const DatasetSplits& splits, const DataSummary& summary);
    void showText(const DatasetSplits& splits);
    void showHistogram(const DataSummary& summary);
    void showRanges(const DataSummary& summary);
    void showFailure(const QString& message);
    void chooseFile();
    void chooseFolder();

    ConfigDocument* m_document;
    QLineEdit* m_path;
    QLabel* m_message;
    QLabel* m_summary;
    QStackedWidget* m_preview;
    QWidget* m_images;
    QGridLayout* m_imageGrid;
    QTableWidget* m_rows;
    QPlainTextEdit* m_text;
    PlotWidget* m_histogram;
    QTableWidget* m_ranges;
    QLabel* m_problems;
    QStringList m_previewLabels;
    QVector<double> m_counts;
    QStringList m_problemList;
};

} // namespace mantissa::ui
