/*
 * test_cpp.cpp - include/sf.hpp, the C++17 layer: futures, tasks, loops,
 * promises and batches over sf.h, with exact results, exceptions turned
 * into failures and back, cancellation, and no leak or allocation where
 * the header promises none (the suite runs under ASan in CI).
 *
 * testutil.h is C11 (<stdatomic.h>), so this program has its own small
 * helpers and main; it reports in TAP as TU_MAIN does.
 */
#include "sf.hpp"

#include <check.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <numeric>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

/* ---- operator new counted: the fast paths must not allocate ------------- */

static std::atomic<long> g_news{0};

/* gcc reads the free() in the replaced operator delete as a mismatch with
 * new-expressions; replacing both is what the standard allows. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

void *operator new(std::size_t n)
{
    g_news.fetch_add(1, std::memory_order_relaxed);
    if (void *p = std::malloc(n ? n : 1))
        return p;
    throw std::bad_alloc();
}
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }

/* ---- helpers --------------------------------------------------------------- */

static void env_threads(int n)
{
    unsetenv("SF_TRACE");
    unsetenv("SF_TRACE_FILE");
    unsetenv("SF_STATS");
    setenv("SF_THREADS", std::to_string(n).c_str(), 1);
}

static long fib_exact(int n)
{
    long a = 0, b = 1;
    for (int i = 0; i < n; i++) {
        long t = a + b;
        a = b;
        b = t;
    }
    return a;
}

/* Tasks fib makes: one per call with n >= 2. */
static uint64_t fib_tasks(int n) { return (uint64_t)fib_exact(n + 1) - 1; }

static void spin_until(const std::atomic<int> &flag)
{
    for (int i = 0; flag.load() == 0 && i < 10000000; i++)
        std::this_thread::yield();
    ck_assert_int_ne(flag.load(), 0);
}

/* ---- fib ------------------------------------------------------------------- */

static long fib_spawn(long n)
{
    if (n < 2)
        return n;
    auto a = sf::spawn([n] { return fib_spawn(n - 1); });
    long b = fib_spawn(n - 2);
    return a.get() + b;
}

static long fib_task(long n)
{
    if (n < 2)
        return n;
    sf::task t([n] { return fib_task(n - 1); });
    long b = fib_task(n - 2);
    return t.get() + b;
}

static long fib_fixed(long n)
{
    if (n < 2)
        return n;
    auto a = sf::spawn<fib_fixed>(n - 1);
    long b = fib_fixed(n - 2);
    return a.get() + b;
}

/* The same with noexcept calls: their tasks run with no catch (sf.hpp,
 * small_task), the same results and counts. */
static long fib_spawn_nx(long n) noexcept
{
    if (n < 2)
        return n;
    auto a = sf::spawn([n]() noexcept { return fib_spawn_nx(n - 1); });
    long b = fib_spawn_nx(n - 2);
    return a.get() + b;
}

static long fib_task_nx(long n) noexcept
{
    if (n < 2)
        return n;
    sf::task t([n]() noexcept { return fib_task_nx(n - 1); });
    long b = fib_task_nx(n - 2);
    return t.get() + b;
}

static long fib_fixed_nx(long n) noexcept
{
    if (n < 2)
        return n;
    auto a = sf::spawn<fib_fixed_nx>(n - 1);
    long b = fib_fixed_nx(n - 2);
    return a.get() + b;
}

/* Which calls take the path without a catch: noexcept ones alone. */
static void nx_probe() noexcept {}
static void probe() {}
/* Functors stand in for lambdas: C++17 has no lambda in an unevaluated
 * operand, and the trait reads only the call operator's noexcept. */
struct plain_call {
    void operator()() {}
};
struct nx_call {
    void operator()() noexcept {}
};
static_assert(!sf::detail::call<plain_call>::nothrow, "a call that may throw");
static_assert(sf::detail::call<nx_call>::nothrow, "a noexcept call");
static_assert(sf::detail::call<sf::detail::fn_constant<nx_probe>>::nothrow, "spawn<noexcept fn>");
static_assert(!sf::detail::call<sf::detail::fn_constant<probe>>::nothrow, "spawn<fn> may throw");
static_assert(sf::detail::call<long (*)(long) noexcept, long>::nothrow, "noexcept pointer");

static void check_fib(int threads, long (*fib)(long))
{
    env_threads(threads);
    ck_assert_int_eq(sf_init(nullptr), 0);
    long before = g_news.load();
    long got = fib(25);
    ck_assert_int_eq(g_news.load() - before, 0); /* no heap on the fast path */
    ck_assert_int_eq(got, fib_exact(25));
    sf_stats st;
    ck_assert_int_eq(sf_stats_read(&st), 0);
    ck_assert_uint_eq(st.created, fib_tasks(25));
    ck_assert_uint_eq(st.discarded + st.cancelled, 0);
    sf_shutdown();
}

/* sf::do_after: runs once its deps are done, which it may get. */
START_TEST(do_after_runs_after_deps)
{
    setenv("SF_THREADS", "2", 1);
    ck_assert_int_eq(sf_init(nullptr), 0);
    {
        sf::promise<int> p;
        auto a = sf::spawn([] { return 1; });
        auto b = p.get_future();
        auto c = sf::do_after(sf::after(a, b), [&] { return a.get() + b.get(); });
        ck_assert(!c.is_done());
        p.set_value(2);
        ck_assert_int_eq(c.get(), 3);
        auto none = sf::do_after(sf::deps<0>{}, [] { return std::string("ran"); });
        ck_assert(none.get() == "ran");
    }
    sf_shutdown();
}
END_TEST

START_TEST(fib_spawn_1) { check_fib(1, fib_spawn); }
END_TEST
START_TEST(fib_spawn_2) { check_fib(2, fib_spawn); }
END_TEST
START_TEST(fib_spawn_4) { check_fib(4, fib_spawn); }
END_TEST
START_TEST(fib_task_1) { check_fib(1, fib_task); }
END_TEST
START_TEST(fib_task_2) { check_fib(2, fib_task); }
END_TEST
START_TEST(fib_task_4) { check_fib(4, fib_task); }
END_TEST
START_TEST(fib_fixed_function_2) { check_fib(2, fib_fixed); }
END_TEST
START_TEST(fib_noexcept_1) { check_fib(1, fib_spawn_nx); }
END_TEST
START_TEST(fib_noexcept_4) { check_fib(4, fib_spawn_nx); }
END_TEST
START_TEST(fib_task_noexcept_2) { check_fib(2, fib_task_nx); }
END_TEST
START_TEST(fib_fixed_noexcept_2) { check_fib(2, fib_fixed_nx); }
END_TEST

/* ---- callables ------------------------------------------------------------- */

static int add3(int a, int b, int c) { return a + b + c; }

struct scaler {
    long k;
    long operator()(long x) const { return k * x; }
};

START_TEST(callables_and_arguments)
{
    env_threads(2);
    ck_assert_int_eq(sf::spawn(add3, 1, 2, 3).get(), 6);          /* function pointer */
    ck_assert_int_eq(sf::spawn(&add3, 10, 20, 30).get(), 60);
    ck_assert_int_eq(sf::spawn(scaler{7}, 6L).get(), 42);          /* functor */
    ck_assert_int_eq(sf::spawn([](int x) { return x * 2; }, 21).get(), 42); /* args */
    long a = 5, b = 6, c = 7;
    ck_assert_int_eq(sf::spawn([a, b, c] { return a * b * c; }).get(), 210); /* 24 bytes */
    std::string s = "hello";
    auto f = sf::spawn([s](const std::string &t) { return s + " " + t; }, std::string("world"));
    std::string hw = f.get(); /* a std::string result (kept: the macro keeps a pointer) */
    ck_assert_str_eq(hw.c_str(), "hello world");
    ck_assert(!f.valid());
    double d = sf::spawn([] { return 0.5; }).get();                /* a double in the pointer */
    ck_assert(d == 0.5);
    ck_assert(sf::spawn([] { return static_cast<void *>(nullptr); }).get() == nullptr);
    ck_assert_int_eq(sf::spawn([] { return 0L; }).get(), 0);       /* NULL value, no failure */
    sf_shutdown();
}
END_TEST

START_TEST(capture_by_reference)
{
    env_threads(4);
    std::vector<long> v(1000);
    std::vector<sf::future<void>> fs;
    for (long i = 0; i < 10; i++)
        fs.push_back(sf::spawn([&v, i] {
            for (long j = i * 100; j < (i + 1) * 100; j++)
                v[j] = j;
        }));
    for (auto &f : fs)
        f.get();
    ck_assert_int_eq(std::accumulate(v.begin(), v.end(), 0L), 999L * 1000 / 2);
    long x = 1;
    auto r = sf::spawn([&x] { x = 41; return x + 1; }); /* one reference: the fast path */
    ck_assert_int_eq(r.get(), 42);
    ck_assert_int_eq(x, 41);
    sf_shutdown();
}
END_TEST

START_TEST(move_only_capture_argument_and_result)
{
    env_threads(2);
    auto p = std::make_unique<long>(7);
    auto f = sf::spawn([p = std::move(p)] { return *p * 6; });
    ck_assert_int_eq(f.get(), 42);
    auto g = sf::spawn([](std::unique_ptr<long> q) { return *q + 1; }, std::make_unique<long>(9));
    ck_assert_int_eq(g.get(), 10);
    auto h = sf::spawn([] { return std::make_unique<std::string>("moved out"); });
    std::unique_ptr<std::string> r = h.get();
    ck_assert_str_eq(r->c_str(), "moved out");
    sf_shutdown();
}
END_TEST

START_TEST(large_capture_allocates_one_block)
{
    env_threads(4);
    std::array<long, 64> big{};
    for (long i = 0; i < 64; i++)
        big[i] = i;
    std::vector<sf::future<long>> fs;
    long before = g_news.load();
    for (int k = 0; k < 100; k++)
        fs.push_back(sf::spawn([big, k] { return std::accumulate(big.begin(), big.end(), 0L) + k; }));
    long news = g_news.load() - before;
    long sum = 0;
    for (auto &f : fs)
        sum += f.get();
    ck_assert_int_eq(sum, 100L * 2016 + 99L * 100 / 2);
    /* one block per task, besides the vector's own growth (at most 8) */
    ck_assert_int_ge(news, 100);
    ck_assert_int_le(news, 108);
    sf_shutdown();
}
END_TEST

START_TEST(void_results)
{
    env_threads(2);
    std::atomic<int> n{0};
    auto f = sf::spawn([&n] { n++; });
    f.get();
    ck_assert_int_eq(n.load(), 1);
    std::array<long, 16> big{};
    auto g = sf::spawn([&n, big] { n += 1 + static_cast<int>(big[3]); }); /* heap path */
    g.get();
    ck_assert_int_eq(n.load(), 2);
    sf_shutdown();
}
END_TEST

/* ---- exceptions ------------------------------------------------------------ */

template <class F>
static void expect_error(F &&fut, int code, const char *msg)
{
    try {
        fut.get();
        ck_abort_msg("get() did not throw");
    } catch (const sf::error &e) {
        ck_assert_int_eq(e.code(), code);
        if (msg)
            ck_assert_str_eq(e.what(), msg);
    }
    ck_assert(!fut.valid());
}

static void exceptions_at(int threads)
{
    env_threads(threads);
    expect_error(sf::spawn([]() -> long { throw std::runtime_error("boom"); }), sf::exception_code,
                 "boom");
    expect_error(sf::spawn([] { throw sf::error(EDOM, "bad domain"); }), EDOM, "bad domain");
    expect_error(sf::spawn([] { throw std::bad_alloc(); }), ENOMEM, nullptr);
    expect_error(sf::spawn([]() -> int {
                     throw std::system_error(ENOENT, std::generic_category(), "open x");
                 }),
                 ENOENT, nullptr);
    expect_error(sf::spawn([] { throw 42; }), sf::exception_code,
                 "an exception not derived from std::exception");
    std::array<long, 16> big{};
    expect_error(sf::spawn([big]() -> std::string { throw std::logic_error("big " + std::to_string(big[0])); }),
                 sf::exception_code, "big 0");
    /* C's sf_fail inside a C++ task, and the value it returns ignored */
    expect_error(sf::spawn([] { sf_fail(ERANGE, "from C %d", 7); return 1L; }), ERANGE, "from C 7");
    /* a parent that lets a child's failure through fails with its code */
    expect_error(sf::spawn([] {
                     auto child = sf::spawn([]() -> long { throw sf::error(EDOM, "deep"); });
                     return child.get() + 1;
                 }),
                 EDOM, "deep");
    /* many failures, some run by workers */
    std::vector<sf::future<long>> fs;
    for (long i = 0; i < 200; i++)
        fs.push_back(sf::spawn([i]() -> long {
            if (i % 3 == 0)
                throw std::runtime_error("third " + std::to_string(i));
            return i;
        }));
    long ok = 0, failed = 0;
    for (long i = 0; i < 200; i++) {
        try {
            ok += fs[i].get();
        } catch (const sf::error &e) {
            std::string want_msg = "third " + std::to_string(i);
            ck_assert_str_eq(e.what(), want_msg.c_str());
            failed++;
        }
    }
    ck_assert_int_eq(failed, 67);
    long want = 0;
    for (long i = 0; i < 200; i++)
        want += i % 3 ? i : 0;
    ck_assert_int_eq(ok, want);
    sf_shutdown();
}

START_TEST(exceptions_become_errors_1) { exceptions_at(1); }
END_TEST
START_TEST(exceptions_become_errors_4) { exceptions_at(4); }
END_TEST

static std::atomic<int> g_unhandled{0};
static std::string g_unhandled_msg;

START_TEST(dropped_failure_goes_to_the_hook)
{
    env_threads(1);
    sf_on_unhandled(
        [](int code, const char *message, void *) {
            ck_assert_int_eq(code, sf::exception_code);
            g_unhandled_msg = message ? message : "";
            g_unhandled++;
        },
        nullptr);
    {
        auto f = sf::spawn([]() -> long { throw std::runtime_error("nobody saw"); });
        ck_assert(sf_wait_all(std::array<sf_future *, 1>{f.native_handle()}.data(), 1, INFINITY) == 0);
    } /* dropped: done, failed, never got */
    ck_assert_int_eq(g_unhandled.load(), 1);
    ck_assert_str_eq(g_unhandled_msg.c_str(), "nobody saw");
    sf_shutdown();
}
END_TEST

START_TEST(misuse_throws)
{
    env_threads(1);
    sf::future<long> f;
    ck_assert(!f.valid());
    expect_error(f, EINVAL, nullptr);
    sf::task<long> t;
    try {
        t.get();
        ck_abort_msg("get of an empty task did not throw");
    } catch (const sf::error &e) {
        ck_assert_int_eq(e.code(), EINVAL);
    }
    auto g = sf::spawn([] { return 3L; });
    sf::future<long> h = std::move(g);
    ck_assert(!g.valid());
    ck_assert(h.valid());
    h = sf::spawn([] { return 4L; }); /* the first is dropped: discarded */
    ck_assert_int_eq(h.get(), 4);
    sf_shutdown();
}
END_TEST

/* ---- cancellation and dropping --------------------------------------------- */

START_TEST(cancel_before_start)
{
    env_threads(1);
    std::atomic<int> ran{0};
    auto f = sf::spawn([&ran] { ran = 1; return 1L; });
    ck_assert(f.cancel());
    ck_assert(f.is_done());
    expect_error(f, ECANCELED, nullptr);
    ck_assert_int_eq(ran.load(), 0);
    sf_stats st;
    sf_stats_read(&st);
    ck_assert_uint_eq(st.cancelled, 1);
    sf_shutdown();
}
END_TEST

START_TEST(cancel_running)
{
    env_threads(2);
    std::atomic<int> started{0};
    auto f = sf::spawn([&started] {
        started = 1;
        long spins = 0;
        while (!sf::cancelled())
            spins++;
        return spins;
    });
    ck_assert(!f.wait_for(0.0)); /* offers it to the pool worker, runs nothing */
    spin_until(started);
    ck_assert(f.cancel());
    expect_error(f, ECANCELED, nullptr);
    sf_shutdown();
}
END_TEST

START_TEST(dropped_future_never_runs_and_frees)
{
    env_threads(1);
    std::atomic<int> ran{0};
    auto token = std::make_shared<int>(1);
    {
        auto small = sf::spawn([&ran] { ran++; });
        auto big = sf::spawn([&ran, token] { ran++; return std::string("x"); });
        ck_assert_int_eq(token.use_count(), 2);
    }
    ck_assert_int_eq(ran.load(), 0);
    ck_assert_int_eq(token.use_count(), 1); /* the block's callable was destroyed */
    sf_stats st;
    sf_stats_read(&st);
    ck_assert_uint_eq(st.created, 2);
    ck_assert_uint_eq(st.cancelled + st.discarded, 2);
    sf_shutdown();
}
END_TEST

START_TEST(dropped_running_future_waits)
{
    env_threads(2);
    std::atomic<int> started{0}, finished{0};
    std::array<long, 8> big{};
    {
        auto f = sf::spawn([&started, &finished, big] {
            started = 1;
            /* does not ask: runs to its end even once cancelled */
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            finished = 1;
            return big[0];
        });
        ck_assert(!f.wait_for(std::chrono::milliseconds(0)));
        spin_until(started);
    } /* the destructor returns once the task ended */
    ck_assert_int_eq(finished.load(), 1);
    sf_shutdown();
}
END_TEST

/* ---- waits ------------------------------------------------------------------ */

START_TEST(wait_and_is_done)
{
    env_threads(2);
    auto f = sf::spawn([] { return 5L; });
    ck_assert(!f.is_done());
    f.wait(); /* runs it here if nobody started it */
    ck_assert(f.is_done());
    ck_assert(f.wait_for(0.0));
    ck_assert_int_eq(f.get(), 5);
    auto g = sf::spawn([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        return 6L;
    });
    ck_assert(g.wait_for(10.0)); /* the pool worker runs it */
    ck_assert_int_eq(g.get(), 6);
    sf_shutdown();
}
END_TEST

/* ---- sf::task --------------------------------------------------------------- */

START_TEST(task_inline_storage)
{
    env_threads(2);
    long before = g_news.load();
    std::array<long, 3> three{1, 2, 3};
    sf::task t([three] { return three[0] + three[1] + three[2]; }); /* 24 bytes, inline */
    sf::task<void> v([&three] { three[0] = 10; });
    ck_assert_int_eq(t.get(), 6);
    v.get();
    ck_assert_int_eq(three[0], 10);
    ck_assert_int_eq(g_news.load() - before, 0);
    sf::task<std::string> s([](int n) { return std::string(static_cast<size_t>(n), 'x'); }, 40);
    std::string got = s.get(), want(40, 'x');
    ck_assert_str_eq(got.c_str(), want.c_str());
    sf::task<long> e([]() -> long { throw std::runtime_error("task boom"); });
    try {
        e.get();
        ck_abort_msg("no throw");
    } catch (const sf::error &x) {
        ck_assert_int_eq(x.code(), sf::exception_code);
        ck_assert_str_eq(x.what(), "task boom");
    }
    sf::task<long> f([]() -> long { return 0; }); /* a NULL value, no failure */
    ck_assert_int_eq(f.get(), 0);
    f.spawn([] { return 8L; });                   /* reused after its get */
    try {
        f.spawn([] { return 9L; });
        ck_abort_msg("a queued task was overwritten");
    } catch (const sf::error &x) {
        ck_assert_int_eq(x.code(), EBUSY);
    }
    ck_assert_int_eq(f.get(), 8);
    sf_shutdown();
}
END_TEST

START_TEST(task_not_got_runs_in_destructor)
{
    env_threads(1);
    std::atomic<int> ran{0};
    auto token = std::make_shared<int>(1);
    try {
        sf::task<void> t([&ran, token] { ran++; });
        throw std::runtime_error("leave the scope");
    } catch (const std::runtime_error &) {
    }
    ck_assert_int_eq(ran.load(), 1);
    ck_assert_int_eq(token.use_count(), 1);
    sf_shutdown();
}
END_TEST

/* ---- promises ---------------------------------------------------------------- */

START_TEST(promise_set_from_a_thread)
{
    env_threads(2);
    sf::promise<long> p;
    sf::future<long> f = p.get_future();
    std::thread setter([p = std::move(p)]() mutable {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        ck_assert(p.set_value(42));
        ck_assert(!p.set_value(43)); /* the setter's one call was made */
    });
    /* got inside a task: it helps, then sleeps, never EDEADLK */
    auto t = sf::spawn([&f] { return f.get() + 1; });
    ck_assert_int_eq(t.get(), 43);
    setter.join();

    sf::promise<void> pv;
    auto fv = pv.get_future();
    std::thread sv([&pv] { pv.set_value(); });
    fv.get();
    sv.join();

    sf::promise<int> pe;
    auto fe = pe.get_future();
    std::thread se([&pe] { pe.set_error(EIO, "no disk"); });
    expect_error(fe, EIO, "no disk");
    se.join();
    sf_shutdown();
}
END_TEST

START_TEST(promise_broken_or_never_handed_out)
{
    env_threads(1);
    sf::future<long> f;
    {
        sf::promise<long> p;
        f = p.get_future();
    }
    expect_error(f, sf::broken_promise_code, "sf::promise destroyed without a value");
    {
        sf::promise<long> q; /* neither handed out nor set: freed quietly */
    }
    {
        sf::promise<long> r;
        r.set_value(1); /* set, never handed out */
    }
    sf::promise<long> s;
    auto fs = s.get_future();
    try {
        (void)s.get_future();
        ck_abort_msg("two futures of one promise");
    } catch (const sf::error &e) {
        ck_assert_int_eq(e.code(), EALREADY);
    }
    ck_assert(fs.cancel());
    ck_assert(!s.set_value(5)); /* cancelled first */
    expect_error(fs, ECANCELED, nullptr);
    sf_shutdown();
}
END_TEST

/* ---- batches ----------------------------------------------------------------- */

START_TEST(batch_tasks)
{
    env_threads(4);
    {
        sf::batch b;
        std::vector<sf::future<long>> fs;
        for (long i = 1; i <= 100; i++)
            fs.push_back(b.spawn([i] { return i * i; }));
        std::array<long, 16> big{};
        big[5] = 1000;
        auto g = b.spawn([big] { return big[5]; });
        b.wait();
        long sum = 0;
        for (auto &f : fs) {
            ck_assert(f.is_done());
            sum += f.get();
        }
        ck_assert_int_eq(sum, 100L * 101 * 201 / 6);
        ck_assert_int_eq(g.get(), 1000);
        ck_assert(b.wait_for(1.0));
    }
    sf_shutdown();
}
END_TEST

/* ---- loops ------------------------------------------------------------------- */

static void loops_at(int threads)
{
    env_threads(threads);
    std::vector<std::atomic<int>> seen(10000);
    sf::for_each(0, 10000, [&seen](int i) { seen[i]++; });
    for (auto &s : seen)
        ck_assert_int_eq(s.load(), 1);
    std::vector<long> v(5000);
    std::iota(v.begin(), v.end(), 1L);
    sf::for_each(v.begin(), v.end(), [](long &x) { x *= 2; });
    ck_assert_int_eq(std::accumulate(v.begin(), v.end(), 0L), 5000L * 5001);
    std::atomic<long> covered{0};
    sf::for_each_range(0, 100000, 1000, [&covered](long lo, long hi) {
        ck_assert_int_le(hi - lo, 1000);
        covered += hi - lo;
    });
    ck_assert_int_eq(covered.load(), 100000);
    long s = sf::reduce(0L, 1000000L, 4096L, 0L,
                        [](long lo, long hi, long &acc) {
                            for (long i = lo; i < hi; i++)
                                acc += i;
                        },
                        [](long &acc, const long &right) { acc += right; });
    ck_assert_int_eq(s, 999999L * 1000000 / 2);
    long sq = sf::transform_reduce(1L, 1001L, 7L, 0L, [](long i) { return i * i; },
                                   [](long a, long b) { return a + b; });
    ck_assert_int_eq(sq, 1000L * 1001 * 2001 / 6);
    ck_assert_int_eq(sf::reduce(5L, 5L, 1L, 77L, [](long, long, long &) {}, [](long &, const long &) {}),
                     77); /* an empty range: the identity */
    sf_shutdown();
}

START_TEST(loops_1) { loops_at(1); }
END_TEST
START_TEST(loops_4) { loops_at(4); }
END_TEST

START_TEST(loop_exceptions)
{
    env_threads(1);
    std::vector<int> ran(100);
    try {
        sf::for_each(0, 100, [&ran](int i) {
            ran[i] = 1;
            if (i == 10)
                throw std::out_of_range("index 10");
        });
        ck_abort_msg("for_each did not throw");
    } catch (const sf::error &e) {
        ck_assert_int_eq(e.code(), sf::exception_code);
        ck_assert_str_eq(e.what(), "index 10");
    }
    /* at one thread exactly the indices up to the failing one ran */
    ck_assert_int_eq(std::accumulate(ran.begin(), ran.end(), 0), 11);
    try {
        (void)sf::reduce(0L, 100L, 10L, 0L,
                         [](long lo, long, long &) {
                             if (lo == 50)
                                 throw sf::error(EDOM, "leaf 5");
                         },
                         [](long &, const long &) {});
        ck_abort_msg("reduce did not throw");
    } catch (const sf::error &e) {
        ck_assert_int_eq(e.code(), EDOM);
        ck_assert_str_eq(e.what(), "leaf 5");
    }
    sf_shutdown();
}
END_TEST

/* ---- main ---------------------------------------------------------------------- */

static Suite *cpp_suite()
{
    Suite *s = suite_create("cpp");
    TCase *tc = tcase_create("cpp");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, fib_spawn_1);
    tcase_add_test(tc, fib_spawn_2);
    tcase_add_test(tc, fib_spawn_4);
    tcase_add_test(tc, fib_task_1);
    tcase_add_test(tc, fib_task_2);
    tcase_add_test(tc, fib_task_4);
    tcase_add_test(tc, fib_noexcept_1);
    tcase_add_test(tc, fib_noexcept_4);
    tcase_add_test(tc, fib_task_noexcept_2);
    tcase_add_test(tc, fib_fixed_noexcept_2);
    tcase_add_test(tc, fib_fixed_function_2);
    tcase_add_test(tc, callables_and_arguments);
    tcase_add_test(tc, capture_by_reference);
    tcase_add_test(tc, move_only_capture_argument_and_result);
    tcase_add_test(tc, large_capture_allocates_one_block);
    tcase_add_test(tc, void_results);
    tcase_add_test(tc, exceptions_become_errors_1);
    tcase_add_test(tc, exceptions_become_errors_4);
    tcase_add_test(tc, dropped_failure_goes_to_the_hook);
    tcase_add_test(tc, misuse_throws);
    tcase_add_test(tc, cancel_before_start);
    tcase_add_test(tc, cancel_running);
    tcase_add_test(tc, dropped_future_never_runs_and_frees);
    tcase_add_test(tc, dropped_running_future_waits);
    tcase_add_test(tc, wait_and_is_done);
    tcase_add_test(tc, task_inline_storage);
    tcase_add_test(tc, task_not_got_runs_in_destructor);
    tcase_add_test(tc, promise_set_from_a_thread);
    tcase_add_test(tc, promise_broken_or_never_handed_out);
    tcase_add_test(tc, batch_tasks);
    tcase_add_test(tc, loops_1);
    tcase_add_test(tc, loops_4);
    tcase_add_test(tc, loop_exceptions);
    tcase_add_test(tc, do_after_runs_after_deps);
    suite_add_tcase(s, tc);
    return s;
}

/* TU_MAIN's: TAP on stdout for automake's driver, one line per case. */
int main()
{
    SRunner *sr = srunner_create(cpp_suite());
    srunner_set_tap(sr, "-");
    srunner_run_all(sr, CK_SILENT);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
