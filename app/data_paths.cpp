#include "data_paths.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>

#ifndef BATCHPILOT_BUILD_DATADIR
#define BATCHPILOT_BUILD_DATADIR ""
#endif

namespace bp::app {

QStringList dataDirectories()
{
    QStringList dirs;
    auto add = [&dirs](const QString &dir) {
        if (dir.isEmpty())
            return;
        const QString clean = QDir::cleanPath(dir);
        if (!dirs.contains(clean))
            dirs << clean;
    };
    // applicationDirPath() needs an application object; without one (a
    // library caller before main's app exists) the other places still count.
    if (QCoreApplication::instance())
        add(QCoreApplication::applicationDirPath() + QStringLiteral("/../share/batchpilot"));
    for (const QString &d : QStandardPaths::standardLocations(QStandardPaths::GenericDataLocation))
        add(d + QStringLiteral("/batchpilot"));
    add(QStringLiteral(BATCHPILOT_BUILD_DATADIR));
    return dirs;
}

QString findDataFile(const QString &relativePath)
{
    for (const QString &dir : dataDirectories()) {
        const QFileInfo f(QDir(dir).filePath(relativePath));
        if (f.isFile() && f.isReadable())
            return f.absoluteFilePath();
    }
    return {};
}

QString sampleTracePath()
{
    return findDataFile(QString::fromLatin1(kSampleTraceFile));
}

QString dataSearchDescription(const QString &relativePath)
{
    QStringList places;
    for (const QString &dir : dataDirectories())
        places << QDir(dir).filePath(relativePath);
    return QStringLiteral("looked for %1").arg(places.join(QStringLiteral(", ")));
}

} // namespace bp::app
