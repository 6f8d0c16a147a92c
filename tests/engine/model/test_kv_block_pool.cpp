// The paged KV cache's books (engine/model/kv_block_pool.h), without a model:
// all-or-nothing allocation from the lowest numbers, a freed run reused in
// order, references, the free list, the scratch block, and prefix blocks
// kept, shared and dropped by hash (a hash collision never shares).
#include "engine/model/kv_block_pool.h"

#include <QtTest>

using namespace bp;

class TestKvBlockPool : public QObject {
    Q_OBJECT
private slots:
    void allocatesAllOrNothingLowestFirst()
    {
        KvBlockPool pool(4, 16); // blocks 1..4, block 0 is scratch
        QCOMPARE(pool.totalBlocks(), std::int64_t(4));
        QCOMPARE(pool.blocksFor(1), std::int64_t(1));
        QCOMPARE(pool.blocksFor(16), std::int64_t(1));
        QCOMPARE(pool.blocksFor(17), std::int64_t(2));
        auto a = pool.allocate(3);
        QVERIFY(a);
        QCOMPARE(*a, (std::vector<std::int32_t>{1, 2, 3}));
        QVERIFY(!pool.allocate(2)); // only one left: nothing taken
        QCOMPARE(pool.freeBlocks(), std::int64_t(1));
        pool.unref(std::vector<std::int32_t>{2});
        QCOMPARE(pool.freeBlocks(), std::int64_t(2));
        auto b = pool.allocate(2);
        QVERIFY(b);
        QCOMPARE(*b, (std::vector<std::int32_t>{2, 4})); // the lowest free first
        QCOMPARE(pool.usedBlocks(), std::int64_t(4));
    }

    // A run handed back comes out again in its order (a sequence's blocks
    // stay ascending, which the CPU attention kernel streams fastest).
    void aFreedRunComesBackInOrder()
    {
        KvBlockPool pool(8, 16);
        auto a = pool.allocate(5);
        QVERIFY(a);
        QCOMPARE(*a, (std::vector<std::int32_t>{1, 2, 3, 4, 5}));
        pool.unref(*a);
        auto b = pool.allocate(3);
        QVERIFY(b);
        QCOMPARE(*b, (std::vector<std::int32_t>{1, 2, 3}));
    }

    void referencesKeepABlockUntilTheLast()
    {
        KvBlockPool pool(2, 4);
        auto a = pool.allocate(1);
        QVERIFY(a);
        pool.ref(*a);
        QCOMPARE(pool.refs(a->front()), 2);
        pool.unref(*a);
        QCOMPARE(pool.freeBlocks(), std::int64_t(1));
        pool.unref(*a);
        QCOMPARE(pool.freeBlocks(), std::int64_t(2));
        pool.unref(*a); // a free block: ignored
        pool.unref(std::vector<std::int32_t>{0}); // the scratch block: ignored
        QCOMPARE(pool.freeBlocks(), std::int64_t(2));
        QCOMPARE(pool.refs(0), 0);
    }

    void keptBlocksAreSharedNotCopied()
    {
        KvBlockPool pool(8, 2);
        auto seq = pool.allocate(3);
        QVERIFY(seq);
        const std::vector<TokenId> tokens{5, 6, 7, 8};
        const std::vector<std::int32_t> head(seq->begin(), seq->begin() + 2);
        QVERIFY(pool.keep(42, head, tokens));
        QVERIFY(!pool.keep(42, head, tokens)); // kept already
        QCOMPARE(pool.refs(head[0]), 2);
        // the sequence leaves: its kept blocks stay
        pool.unref(*seq);
        QCOMPARE(pool.usedBlocks(), std::int64_t(2));
        // another sequence starts from them: the same block numbers
        std::vector<TokenId> got;
        auto chain = pool.chain(std::vector<std::uint64_t>{42}, &got);
        QVERIFY(chain.isOk());
        QCOMPARE(*chain, head);
        QCOMPARE(got, tokens);
        QCOMPARE(pool.refs(head[0]), 2);
        QCOMPARE(pool.keptTokens(std::vector<std::uint64_t>{42, 7}), std::int64_t(4));
        // a collision (same hash, other tokens) is never shared
        QVERIFY(!pool.share(42, std::vector<TokenId>{5, 6, 7, 9}));
        auto same = pool.share(42, tokens);
        QVERIFY(same);
        QCOMPARE(*same, head);
        QCOMPARE(pool.refs(head[0]), 3);
        // an unknown hash in a chain fails and references nothing
        auto bad = pool.chain(std::vector<std::uint64_t>{42, 99});
        QCOMPARE(bad.status().code(), StatusCode::Internal);
        QCOMPARE(pool.refs(head[0]), 3);
        pool.drop(std::vector<std::uint64_t>{42, 99});
        QCOMPARE(pool.keptEntries(), std::size_t(0));
        pool.unref(*chain);
        pool.unref(*same);
        QCOMPARE(pool.usedBlocks(), std::int64_t(0));
    }
};

QTEST_GUILESS_MAIN(TestKvBlockPool)
#include "test_kv_block_pool.moc"
