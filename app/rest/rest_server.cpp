#include "rest_server.h"

#include "http_frontend.h"

#include <QMetaObject>

namespace bp::rest {

RestServer::RestServer(Engine &engine, RestOptions options, QString version)
    : m_engine(engine), m_options(std::move(options)), m_version(std::move(version))
{
    m_thread.setObjectName(QStringLiteral("batchpilot-rest"));
}

RestServer::~RestServer()
{
    stop();
}

Result<quint16> RestServer::start()
{
    if (Status s = checkRestOptions(m_options); !s)
        return s;
    if (m_thread.isRunning())
        return Status(StatusCode::InvalidArgument, "the REST server is already running");
    m_anchor = new QObject;
    m_anchor->moveToThread(&m_thread);
    QObject::connect(&m_thread, &QThread::finished, m_anchor, &QObject::deleteLater);
    m_thread.start();

    // Build the server on its own thread, so every QObject it creates
    // (including Qt's private ones) belongs to that thread.
    Result<quint16> result = Status(StatusCode::Internal, "the REST thread did not start");
    QMetaObject::invokeMethod(
        m_anchor,
        [&] {
            auto *frontend = new HttpFrontend(m_engine, m_options, m_version);
            result = frontend->startListening();
            if (result)
                m_frontend = frontend;
            else
                delete frontend;
        },
        Qt::BlockingQueuedConnection);
    if (!result) {
        m_thread.quit();
        m_thread.wait();
        m_anchor = nullptr;
        return result;
    }
    m_port = *result;
    return result;
}

QString RestServer::url() const
{
    return endpointUrl(m_options.bind, m_port);
}

void RestServer::setDraining(bool draining)
{
    if (m_frontend) // set before start() returns, cleared only by stop()
        m_frontend->setDraining(draining);
}

void RestServer::stop()
{
    if (!m_thread.isRunning())
        return;
    QMetaObject::invokeMethod(
        m_anchor,
        [this] {
            if (!m_frontend)
                return;
            m_frontend->closeAll();
            delete m_frontend;
            m_frontend = nullptr;
        },
        Qt::BlockingQueuedConnection);
    m_thread.quit();
    m_thread.wait();
    m_anchor = nullptr; // deleted on the thread's finished signal
}

} // namespace bp::rest
