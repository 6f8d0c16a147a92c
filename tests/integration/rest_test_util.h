// Helpers shared by the REST integration tests.
#pragma once

#include "http_client.h"

#include <QJsonArray>

// PUT /v1/config with `fields` (the rest keep their values).
HttpResponse putConfig(quint16 port, const QJsonObject &fields);
// The engine's queue depth from GET /v1/stats (-1 when unreadable).
int queueDepth(quint16 port);
// Polls /v1/stats until the queue holds `depth` requests (a condition wait
// with a deadline, like QTRY_COMPARE).
bool waitForQueueDepth(quint16 port, int depth, int timeoutMs = 10000);
// {"input_ids": [...]} plus extra fields.
QByteArray inferBody(const QList<int> &ids, const QJsonObject &extra = {});
// The value of one sample line of /metrics ("name{labels}"), or -1.
double metricValue(const QByteArray &metrics, const QByteArray &sample);
