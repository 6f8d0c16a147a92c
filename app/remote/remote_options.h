// What a remote target is and how it is driven: the server's URL and
// protocol, the model's name there, the client's caps (connections, its own
// queue), timeouts and scraping, and the facts the replay generates inputs
// for. validate() checks them with messages naming the flag.
#pragma once

#include "remote_codec.h"

#include "engine/core/result.h"
#include "engine/sim/simulation/router.h"

#include <QList>
#include <QString>
#include <QUrl>

#include <nlohmann/json.hpp>

namespace bp::remote {

struct RemoteOptions {
    QUrl target; // http[s]://host[:port][/prefix]; routes are appended to the prefix
    // A fleet (`replay --target URL1,URL2`): every
    // replica's URL in replica order, replicas[0] == target. Empty: target
    // alone, no router. Each request goes to the replica the client-side
    // router picks (engine/sim/simulation/router.h, the simulator's Router).
    QList<QUrl> replicas;
    RouterOptions router; // policy and load bound; .replicas is replicas.size()
    Protocol protocol = Protocol::Oip;
    QString model;           // the model's name on the server
    QString token;           // sent as "Authorization: Bearer T" when set
    int maxConcurrency = 64; // connections (and so requests on the wire) at most
    int maxQueued = 4096;    // requests waiting for a connection at most (0 = no cap); more are shed
    Duration timeout = std::chrono::seconds(60);       // per request, connection wait excluded
    Duration scrapeInterval = std::chrono::seconds(1); // zero: no scraping
    QUrl metricsUrl;                                   // default: the target's origin + /metrics
    // What the replay generates inputs for (the remote model's facts are
    // not discoverable the same way on every server, so they are given).
    int vocabSize = 256;
    int maxInputTokens = 4096;
    bool generative = true;
    int maxNewTokens = 0; // cap on a request's generated tokens (0 = the trace's)
    // The server's kind when known ("llamacpp", "vllm", ...; empty: not
    // known): its requests carry that kind's dialect (dialectFor), so an
    // answer runs to the trace's output length (ignore_eos) as the probe's
    // do, and is counted as the probe's are.
    std::string server;
};

// InvalidArgument naming the problem: scheme, host, concurrency, ...
Status validate(const RemoteOptions &options);

// The URLs a replay drives: options.replicas, or the target alone.
QList<QUrl> targetUrls(const RemoteOptions &options);

// The URLs comma-separated: sessions.target_url.
QString targetList(const RemoteOptions &options);
// sessions.replay's "target": the URLs, protocol, model, caps, timeouts,
// whether a token is sent (never the token), and a fleet's router.
nlohmann::json describeOptions(const RemoteOptions &options);

// `--target URL[,URL...]`: the comma-separated URLs, trimmed. Sets
// o.target (the first) and, for two or more, o.replicas and o.router
// (policy `router`, replica count; one URL keeps no router). InvalidArgument
// for an empty list or entry, a URL given twice or an unknown policy;
// validate() checks each URL.
Status setTargets(RemoteOptions &o, const QString &list, const QString &router = {});

} // namespace bp::remote
