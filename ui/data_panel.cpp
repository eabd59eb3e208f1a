#include "ui/data_panel.h"

#include "engine/data/dataset.h"
#include "engine/data/file_dataset.h"
#include "engine/util/check.h"
#include "ui/config_document.h"
#include "ui/plot_widget.h"

#include <QFileDialog>
#include <QFontDatabase>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QPixmap>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QStackedWidget>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace mantissa::ui {

namespace {

constexpr std::size_t kPreviewImages = 12; // a grid of 4 x 3
constexpr int kPreviewColumns = 4;
constexpr int kPreviewRows = 8; // of a table
constexpr int kPreviewFeatures = 32;
static_assert(kPreviewRows <= RawHead::kMaxSamples && kPreviewFeatures <= RawHead::kMaxValues,
              "the table preview shows values the loader kept as read");
constexpr int kPreviewPixels = 64; // an image's side in the grid, at least
constexpr int kTextSampleBytes = 400;

QGroupBox* section(const QString& title, QWidget* content)
{
    auto* box = new QGroupBox(title);
    auto* layout = new QVBoxLayout(box);
    layout->addWidget(content);
    return box;
}

// A sample's value of `splits`'s training set mapped back through the normalisation: for the
// image grid, whose pixels are 8-bit shades where the float rounding cannot show.
float originalValue(const DatasetSplits& splits, std::int64_t sample, std::int64_t index, const ChannelLayout& layout)
{
    const Normalization& n = splits.normalization;
    const float value = splits.train.sample(sample)[index];
    return splits.normalized ? n.original(value, n.groupOf(index, layout)) : value;
}

// A value of one of the first training samples exactly as the file holds it: from the head the
// loader kept before normalising (a table's cells print as written, not mapped back in float).
float valueAsRead(const DatasetSplits& splits, std::int64_t sample, std::int64_t index)
{
    return splits.normalized ? splits.rawHead.at(sample, index) : splits.train.sample(sample)[index];
}

QString className(const DatasetSplits& splits, std::int64_t label)
{
    const auto c = static_cast<std::size_t>(label);
    return c < splits.classNames.size() ? QString::fromStdString(splits.classNames[c]) : QString::number(label);
}

} // namespace

DataPanel::DataPanel(ConfigDocument* document, QWidget* parent) : QWidget(parent), m_document(document)
{
    m_path = new QLineEdit;
    m_path->setObjectName("dataPath");
    m_path->setReadOnly(true);
    m_path->setPlaceholderText(tr("the built-in dataset of the config"));
    auto* file = new QPushButton(tr("File…"));
    file->setObjectName("chooseDataFile");
    file->setToolTip(tr("A table (CSV, TSV), NumPy arrays (.npy, .npz), a CSV listing images, IDX or text"));
    auto* folder = new QPushButton(tr("Folder…"));
    folder->setObjectName("chooseDataFolder");
    folder->setToolTip(
        tr("A folder of images (one subfolder per class), of IDX files, of x.npy and y.npy, or of text"));
    auto* read = new QPushButton(tr("Read"));
    read->setObjectName("readData");
    read->setToolTip(tr("Read the config's data as a training run would, and show what it holds"));
    connect(file, &QPushButton::clicked, this, &DataPanel::chooseFile);
    connect(folder, &QPushButton::clicked, this, &DataPanel::chooseFolder);
    connect(read, &QPushButton::clicked, this, &DataPanel::inspect);
    auto* source = new QHBoxLayout;
    source->addWidget(m_path, 1);
    source->addWidget(file);
    source->addWidget(folder);
    source->addWidget(read);

    m_message = new QLabel;
    m_message->setObjectName("dataMessage");
    m_message->setWordWrap(true);
    m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_message->setStyleSheet("QLabel { color: #a00000; }");
    m_message->hide();

    const QFont fixed = QFontDatabase::systemFont(QFontDatabase::FixedFont);
    m_summary = new QLabel(tr("Choose a file or folder, or read the config's dataset."));
    m_summary->setObjectName("dataSummary");
    m_summary->setFont(fixed);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_summary->setWordWrap(true);

    m_images = new QWidget;
    m_imageGrid = new QGridLayout(m_images);
    m_rows = new QTableWidget;
    m_rows->setObjectName("dataRows");
    m_rows->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_rows->verticalHeader()->setDefaultSectionSize(22);
    m_text = new QPlainTextEdit;
    m_text->setObjectName("dataText");
    m_text->setReadOnly(true);
    m_text->setFont(fixed);
    m_preview = new QStackedWidget;
    m_preview->addWidget(m_images);
    m_preview->addWidget(m_rows);
    m_preview->addWidget(m_text);
    m_preview->setMinimumHeight(220);

    m_histogram = new PlotWidget(tr("Training samples per class"));
    m_histogram->setObjectName("classHistogram");
    m_histogram->setMinimumHeight(180);
    m_histogram->legend->setVisible(false); // one series, named by the title
    m_ranges = new QTableWidget(0, 4);
    m_ranges->setObjectName("dataRanges");
    m_ranges->setHorizontalHeaderLabels({tr("Channel or feature"), tr("Minimum"), tr("Maximum"), tr("Mean")});
    m_ranges->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_ranges->horizontalHeader()->setStretchLastSection(true);
    m_ranges->verticalHeader()->hide();
    m_ranges->setMinimumHeight(120);
    m_problems = new QLabel;
    m_problems->setObjectName("dataProblems");
    m_problems->setWordWrap(true);

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(source);
    layout->addWidget(m_message);
    layout->addWidget(section(tr("What the data holds"), m_summary));
    layout->addWidget(section(tr("Preview (training samples as read)"), m_preview));
    layout->addWidget(section(tr("Classes"), m_histogram));
    layout->addWidget(section(tr("Ranges as read (training)"), m_ranges));
    layout->addWidget(section(tr("Problems found"), m_problems));
    layout->addStretch(1);

    const auto showPath = [this] {
        const DataSpec& data = m_document->config().data;
        m_path->setText(QString::fromStdString(data.dataset == DatasetKind::Files  ? data.path
                                               : data.dataset == DatasetKind::Text ? data.directory
                                                                                   : std::string()));
    };
    connect(m_document, &ConfigDocument::changed, this, showPath);
    showPath();
}

void DataPanel::chooseFile()
{
    const QString path =
        QFileDialog::getOpenFileName(this, tr("Data file"), m_path->text(),
                                     tr("Data (*.csv *.tsv *.tab *.npy *.npz *.txt *ubyte *ubyte.gz);;All files (*)"));
    if (!path.isEmpty())
        useSource(path);
}

void DataPanel::chooseFolder()
{
    const QString path = QFileDialog::getExistingDirectory(this, tr("Data folder"), m_path->text());
    if (!path.isEmpty())
        useSource(path);
}

void DataPanel::useSource(const QString& path)
{
    RunConfig next = m_document->config();
    try {
        useDataSource(next.data, path.toStdString());
    } catch (const Error& e) {
        showFailure(QString::fromStdString(e.what()));
        return;
    }
    m_document->apply(next, tr("Data source"));
    inspect();
}

void DataPanel::inspect()
{
    const RunConfig& config = m_document->config();
    DatasetSplits splits;
    DataSummary summary;
    try {
        splits = loadDatasets(config.data, config.training.seed);
        summary = summarizeData(splits, config.data);
    } catch (const Error& e) { // bad data or settings: the message names the file and the place
        showFailure(QString::fromStdString(e.what()));
        return;
    }
    // A model that cannot take the data is a problem to see now, not when training starts.
    if (Shape(config.model.input) != splits.train.sampleShape)
        summary.problems.push_back("the model takes samples of model.input " + Shape(config.model.input).toString() +
                                   " but the data's are " + splits.train.sampleShape.toString());
    m_message->hide();
    m_message->clear();
    showSummary(splits, summary);
}

void DataPanel::showFailure(const QString& message)
{
    m_message->setText(message);
    m_message->show();
    m_summary->setText(tr("The data could not be read."));
    m_previewLabels.clear();
    m_counts.clear();
    m_problemList = QStringList{message};
    m_problems->setText(message);
    m_ranges->setRowCount(0);
    m_rows->setRowCount(0);
    m_text->clear();
    while (QLayoutItem* item = m_imageGrid->takeAt(0)) {
        delete item->widget();
        delete item;
    }
    m_histogram->clearPlottables();
    m_histogram->replot();
}

void DataPanel::showSummary(const DatasetSplits& splits, const DataSummary& summary)
{
    // The head of `mantissa-cli data`'s text: the same lines, before the histogram and ranges.
    const QString text = QString::fromStdString(dataSummaryText(summary));
    m_summary->setText(text.section(QStringLiteral("\n\n"), 0, 0));
    if (splits.train.labelShape.rank() > 0 && splits.task != DataTask::Regression)
        showText(splits);
    else if (splits.train.sampleShape.rank() == 3 || splits.train.sampleShape.rank() == 2)
        showImages(splits);
    else
        showRows(splits, summary);
    showHistogram(summary);
    showRanges(summary);
    m_problemList.clear();
    for (const std::string& problem : summary.problems)
        m_problemList << QString::fromStdString(problem);
    m_problems->setText(m_problemList.isEmpty() ? tr("None found.")
                                                : QStringLiteral("• ") + m_problemList.join("\n• "));
}

void DataPanel::showImages(const DatasetSplits& splits)
{
    while (QLayoutItem* item = m_imageGrid->takeAt(0)) {
        delete item->widget();
        delete item;
    }
    m_previewLabels.clear();
    const Shape& shape = splits.train.sampleShape;
    const bool withChannels = shape.rank() == 3;
    const std::int64_t channels = withChannels ? shape[0] : 1;
    const std::int64_t height = withChannels ? shape[1] : shape[0], width = withChannels ? shape[2] : shape[1];
    const ChannelLayout layout = channelLayout(shape);
    // The samples to show: the first of each class in turn, so that every class appears (the
    // files list them class by class); the first ones for regression.
    std::vector<std::int64_t> picks;
    if (splits.task == DataTask::Regression || splits.train.classes < 1) {
        for (std::int64_t s = 0; s < std::min<std::int64_t>(kPreviewImages, splits.train.size()); ++s)
            picks.push_back(s);
    } else {
        std::vector<std::vector<std::int64_t>> byClass(static_cast<std::size_t>(splits.train.classes));
        for (std::int64_t s = 0; s < splits.train.size(); ++s) {
            auto& list = byClass[static_cast<std::size_t>(splits.train.sampleLabels(s)[0])];
            if (list.size() < kPreviewImages)
                list.push_back(s);
        }
        for (std::size_t round = 0; picks.size() < kPreviewImages && round < kPreviewImages; ++round)
            for (const auto& list : byClass)
                if (round < list.size() && picks.size() < kPreviewImages)
                    picks.push_back(list[round]);
    }
    // The range to show: [0, 1] for pixels as the image readers give them; else the samples' own.
    float lo = 0, hi = 1;
    for (const std::int64_t s : picks)
        for (std::int64_t i = 0; i < splits.train.sampleSize(); ++i) {
            const float v = originalValue(splits, s, i, layout);
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
    const float scale = hi > lo ? 255.0f / (hi - lo) : 0.0f;
    const int side = std::max<int>(kPreviewPixels, static_cast<int>(std::max(height, width)));
    for (std::size_t k = 0; k < picks.size(); ++k) {
        const std::int64_t s = picks[k];
        QImage image(static_cast<int>(width), static_cast<int>(height),
                     channels == 3 ? QImage::Format_RGB888 : QImage::Format_Grayscale8);
        for (std::int64_t y = 0; y < height; ++y) {
            uchar* line = image.scanLine(static_cast<int>(y));
            for (std::int64_t x = 0; x < width; ++x)
                for (std::int64_t c = 0; c < (channels == 3 ? 3 : 1); ++c) {
                    const float v = originalValue(splits, s, c * height * width + y * width + x, layout);
                    line[x * (channels == 3 ? 3 : 1) + c] =
                        static_cast<uchar>(std::clamp(std::lround((v - lo) * scale), 0L, 255L));
                }
        }
        auto* picture = new QLabel;
        picture->setPixmap(QPixmap::fromImage(image.scaled(
            side, side, Qt::KeepAspectRatio, height < side ? Qt::FastTransformation : Qt::SmoothTransformation)));
        picture->setAlignment(Qt::AlignCenter);
        const QString label = splits.task == DataTask::Regression
                                  ? QString::number(static_cast<double>(splits.train.sampleLabels(s)[0]), 'g', 4)
                                  : className(splits, static_cast<std::int64_t>(splits.train.sampleLabels(s)[0]));
        auto* caption = new QLabel(label);
        caption->setAlignment(Qt::AlignCenter);
        auto* cell = new QWidget;
        auto* cellLayout = new QVBoxLayout(cell);
        cellLayout->setContentsMargins(2, 2, 2, 2);
        cellLayout->addWidget(picture);
        cellLayout->addWidget(caption);
        m_imageGrid->addWidget(cell, static_cast<int>(k) / kPreviewColumns, static_cast<int>(k) % kPreviewColumns);
        m_previewLabels << label;
    }
    m_preview->setCurrentWidget(m_images);
}

void DataPanel::showRows(const DatasetSplits& splits, const DataSummary& summary)
{
    const Dataset& train = splits.train;
    const auto features = static_cast<int>(std::min<std::int64_t>(train.sampleSize(), kPreviewFeatures));
    const auto labels = static_cast<int>(train.labelSize());
    m_rows->clear();
    m_rows->setColumnCount(features + labels);
    QStringList header;
    for (int f = 0; f < features; ++f)
        header << (static_cast<std::size_t>(f) < summary.ranges.size()
                       ? QString::fromStdString(summary.ranges[static_cast<std::size_t>(f)].name)
                       : tr("feature %1").arg(f + 1));
    for (int l = 0; l < labels; ++l)
        header << (splits.task == DataTask::Regression ? (labels > 1 ? tr("target %1").arg(l + 1) : tr("target"))
                                                       : tr("label"));
    m_rows->setHorizontalHeaderLabels(header);
    const auto rows = static_cast<int>(std::min<std::int64_t>(kPreviewRows, train.size()));
    m_rows->setRowCount(rows);
    for (int r = 0; r < rows; ++r) {
        for (int f = 0; f < features; ++f)
            m_rows->setItem(
                r, f, new QTableWidgetItem(QString::number(static_cast<double>(valueAsRead(splits, r, f)), 'g', 7)));
        for (int l = 0; l < labels; ++l) {
            const float y = train.sampleLabels(r)[l];
            m_rows->setItem(r, features + l,
                            new QTableWidgetItem(splits.task == DataTask::Regression
                                                     ? QString::number(static_cast<double>(y), 'g', 5)
                                                     : className(splits, static_cast<std::int64_t>(y))));
        }
    }
    m_rows->resizeColumnsToContents();
    m_preview->setCurrentWidget(m_rows);
}

void DataPanel::showText(const DatasetSplits& splits)
{
    QByteArray bytes;
    const Dataset& train = splits.train;
    for (std::int64_t i = 0; i < std::min<std::int64_t>(train.sampleSize(), kTextSampleBytes) && train.size() > 0; ++i)
        bytes.append(static_cast<char>(static_cast<int>(train.sample(0)[i])));
    m_text->setPlainText(QString::fromUtf8(bytes));
    m_preview->setCurrentWidget(m_text);
}

void DataPanel::showHistogram(const DataSummary& summary)
{
    m_histogram->clearPlottables();
    m_counts.clear();
    // A byte-level text's 256 classes say little; regression has none.
    if (summary.trainCounts.empty() || summary.classes > 100) {
        m_histogram->replot();
        return;
    }
    auto* bars = new QCPBars(m_histogram->xAxis, m_histogram->yAxis);
    bars->setName(tr("training"));
    bars->setPen(QPen(QColor(31, 119, 180)));
    bars->setBrush(QColor(31, 119, 180, 160));
    QVector<double> keys;
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    for (std::size_t c = 0; c < summary.trainCounts.size(); ++c) {
        keys << static_cast<double>(c);
        m_counts << static_cast<double>(summary.trainCounts[c]);
        ticker->addTick(static_cast<double>(c), c < summary.classNames.size()
                                                    ? QString::fromStdString(summary.classNames[c])
                                                    : QString::number(c));
    }
    bars->setData(keys, m_counts);
    m_histogram->xAxis->setTicker(ticker);
    // Names side by side collide beyond a few classes: slanted, they keep apart.
    m_histogram->xAxis->setTickLabelRotation(keys.size() > 5 ? -40 : 0);
    m_histogram->xAxis->setRange(-0.7, static_cast<double>(keys.size()) - 0.3);
    m_histogram->yAxis->setRange(0, *std::max_element(m_counts.begin(), m_counts.end()) * 1.15 + 1);
    m_histogram->replot();
}

void DataPanel::showRanges(const DataSummary& summary)
{
    m_ranges->setRowCount(static_cast<int>(summary.ranges.size()));
    for (std::size_t i = 0; i < summary.ranges.size(); ++i) {
        const ValueRange& r = summary.ranges[i];
        const int row = static_cast<int>(i);
        m_ranges->setItem(row, 0, new QTableWidgetItem(QString::fromStdString(r.name)));
        m_ranges->setItem(row, 1, new QTableWidgetItem(QString::number(static_cast<double>(r.minimum), 'g', 5)));
        m_ranges->setItem(row, 2, new QTableWidgetItem(QString::number(static_cast<double>(r.maximum), 'g', 5)));
        m_ranges->setItem(row, 3, new QTableWidgetItem(QString::number(r.mean, 'g', 5)));
    }
    m_ranges->resizeColumnsToContents();
}

QString DataPanel::message() const { return m_message->text(); }

QString DataPanel::summaryText() const { return m_summary->text(); }

QStringList DataPanel::previewLabels() const { return m_previewLabels; }

QString DataPanel::textSample() const { return m_text->toPlainText(); }

QVector<double> DataPanel::histogram() const { return m_counts; }

QStringList DataPanel::problems() const { return m_problemList; }

} // namespace mantissa::ui
