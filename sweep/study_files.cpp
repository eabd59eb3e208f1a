#include "sweep/study_files.h"

#include "engine/util/check.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

namespace mantissa::sweep {

QString studiesDirectory()
{
    QStringList candidates;
    if (const QString env = qEnvironmentVariable("MANTISSA_STUDIES_DIR"); !env.isEmpty())
        return QDir(env).exists() ? QDir(env).absolutePath() : QString();
    // The working directory's studies/ (a checkout), the installed ones beside the program,
    // then the source tree this was built from.
    candidates << QDir::current().filePath(QStringLiteral("studies"));
    if (QCoreApplication::instance())
        candidates
            << QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral(MANTISSA_STUDIES_INSTALL_RELDIR));
    candidates << QStringLiteral(MANTISSA_STUDIES_SOURCE_DIR);
    for (const QString& dir : candidates)
        if (QFileInfo(dir).isDir())
            return QDir(dir).absolutePath();
    return {};
}

QStringList studyFiles()
{
    const QString dir = studiesDirectory();
    if (dir.isEmpty())
        return {};
    QStringList files;
    for (const QFileInfo& file : QDir(dir).entryInfoList({QStringLiteral("*.json")}, QDir::Files, QDir::Name))
        files << file.absoluteFilePath();
    return files;
}

QString resolveStudyFile(const QString& nameOrFile)
{
    if (QFileInfo(nameOrFile).isFile())
        return nameOrFile;
    const QString dir = studiesDirectory();
    const QString file = dir.isEmpty() ? QString() : QDir(dir).filePath(nameOrFile + QStringLiteral(".json"));
    if (!file.isEmpty() && QFileInfo(file).isFile())
        return file;
    QStringList names;
    for (const QString& f : studyFiles())
        names << QFileInfo(f).completeBaseName();
    throw ConfigError(
        "no study \"" + nameOrFile.toStdString() + "\": not a file, and " +
        (dir.isEmpty() ? std::string("no studies folder was found (set MANTISSA_STUDIES_DIR)")
                       : "the studies in " + dir.toStdString() + " are " +
                             (names.isEmpty() ? std::string("none") : names.join(QStringLiteral(", ")).toStdString())));
}

} // namespace mantissa::sweep
