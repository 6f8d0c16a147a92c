#include "rest_test_util.h"

#include <QDeadlineTimer>
#include <QThread>

HttpResponse putConfig(quint16 port, const QJsonObject &fields)
{
    return httpRequest(port, "PUT", "/v1/config", toJson(fields));
}

int queueDepth(quint16 port)
{
    const HttpResponse r = httpRequest(port, "GET", "/v1/stats");
    if (r.status != 200)
        return -1;
    return r.json().value("queue_depth").toInt(-1);
}

bool waitForQueueDepth(quint16 port, int depth, int timeoutMs)
{
    QDeadlineTimer deadline(timeoutMs);
    while (!deadline.hasExpired()) {
        if (queueDepth(port) == depth)
            return true;
        QThread::yieldCurrentThread(); // each poll is a full HTTP round trip; no sleep needed
    }
    return false;
}

QByteArray inferBody(const QList<int> &ids, const QJsonObject &extra)
{
    QJsonObject o = extra;
    QJsonArray a;
    for (int id : ids)
        a.append(id);
    o.insert("input_ids", a);
    return toJson(o);
}

double metricValue(const QByteArray &metrics, const QByteArray &sample)
{
    for (const QByteArray &line : metrics.split('\n')) {
        if (line.startsWith(sample + ' '))
            return line.mid(sample.size() + 1).toDouble();
    }
    return -1;
}
