/*
 * sf.hpp - libsf for C++17: futures, tasks, loops, promises and batches over
 * the C API of sf.h, header-only. docs/cpp.md is the guide; sf.h has the
 * contract of every call underneath, and it holds here too (threads,
 * laziness, helping gets, shutdown) unless this file says otherwise.
 *
 * What this layer adds, and must keep true:
 * - A C++ exception never crosses libsf's C frames. Every function libsf
 *   calls back (a task, a loop body, a reduce leaf or join) catches
 *   everything and turns it into an sf_fail() whose message is what(); a
 *   get, loop or reduce that sees a failure throws sf::error with the code
 *   and the message. The exception's own type is not carried over.
 * - A callable and its arguments that fit in a pointer and are trivially
 *   copyable travel inside sf_do()'s void * argument, and a result that fits
 *   there comes back in the task's void * value: spawning such a lambda costs
 *   what sf_do() costs, no allocation. Anything else takes one heap block per
 *   task (the callable, its arguments and the result).
 * - A future's task never outlives its sf::future: destroying a future that
 *   was not got cancels the task (one not started never runs) and waits for
 *   a running one to end, so what the task captured by reference is still
 *   there while it runs.
 */
#ifndef SF_HPP
#define SF_HPP

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <exception>
#include <functional>
#include <iterator>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>

#include "sf.h"

namespace sf {

/* The code of a failure made from an exception that carries none (neither
 * sf::error, std::system_error nor std::bad_alloc): above every errno value,
 * so it is told from them, and > 0 as sf_fail() wants. */
inline constexpr int exception_code = 1000;

/* The code a getter of a promise sees when the sf::promise was destroyed
 * without a value (std::future_errc::broken_promise's meaning). */
inline constexpr int broken_promise_code = EPIPE;

/* A failed or cancelled task, loop or reduce, or a call of libsf that failed:
 * code() is the errno-style code (the task's sf_fail() code, ECANCELED,
 * EDEADLK, ...), what() the failure's message, else the code's text. Thrown
 * inside a task, it fails the task with its own code and message. */
class error : public std::runtime_error {
  public:
    error(int code, const std::string &message)
        : std::runtime_error(message.empty() ? std::generic_category().message(code) : message),
          code_(code)
    {
    }
    explicit error(int code) : error(code, std::string()) {}
    int code() const noexcept { return code_; }

  private:
    int code_;
};

/* Inside a task or a loop's body: true if it, or a task above it, was
 * cancelled (sf_cancelled()); it should stop. Outside: false. */
inline bool cancelled() noexcept { return sf_cancelled() != 0; }

namespace detail {

/* Turns the exception being handled into a failure of the running task or
 * loop body. Called only from a catch block inside a callback of libsf, where
 * sf_fail() has a task or a body to fail. A second failure is refused by
 * libsf (EALREADY) and dropped: the first stands, as in C. */
inline void fail_current() noexcept
{
    try {
        throw;
    } catch (const error &e) {
        sf_fail(e.code() > 0 ? e.code() : exception_code, "%s", e.what());
    } catch (const std::bad_alloc &e) {
        sf_fail(ENOMEM, "%s", e.what());
    } catch (const std::system_error &e) {
        int c = e.code().value();
        sf_fail(c > 0 ? c : exception_code, "%s", e.what());
    } catch (const std::exception &e) {
        sf_fail(exception_code, "%s", e.what());
    } catch (...) {
        sf_fail(exception_code, "an exception not derived from std::exception");
    }
}

/* Throws sf::error for a libsf call that failed with errno `code`. */
[[noreturn]] inline void throw_code(int code, const char *what)
{
    throw error(code, std::string(what) + ": " + std::generic_category().message(code));
}

/* ---- a callable and its arguments, as one object --------------------------
 *
 * call<F, A...> holds a decayed callable and decayed arguments and invokes
 * them once, as rvalues (as std::thread does). An empty callable (a lambda
 * without captures, fn_constant) is an empty base, so it takes no byte and a
 * call of one argument is as big as the argument: such a call fits in the
 * void * of sf_do(). Trivially copyable exactly when every part is. */

template <class F, bool Empty = std::is_empty_v<F> && !std::is_final_v<F>>
struct fn_part {
    F f_;
    template <class U>
    fn_part(std::in_place_t, U &&u) : f_(std::forward<U>(u))
    {
    }
    F &fn() noexcept { return f_; }
};

template <class F>
struct fn_part<F, true> : F {
    template <class U>
    fn_part(std::in_place_t, U &&u) : F(std::forward<U>(u))
    {
    }
    F &fn() noexcept { return *this; }
};

template <std::size_t I, class T>
struct arg_part {
    T v_;
};

template <class Seq, class... A>
struct args_part;

template <std::size_t... I, class... A>
struct args_part<std::index_sequence<I...>, A...> : arg_part<I, A>... {
    template <class... U>
    args_part(std::in_place_t, U &&...u) : arg_part<I, A>{std::forward<U>(u)}...
    {
    }
    template <class G>
    decltype(auto) apply(G &&g)
    {
        return std::invoke(std::forward<G>(g), std::move(static_cast<arg_part<I, A> &>(*this).v_)...);
    }
};

template <class F, class... A>
struct call : fn_part<F>, args_part<std::index_sequence_for<A...>, A...> {
    template <class G, class... U>
    call(std::in_place_t, G &&g, U &&...u)
        : fn_part<F>(std::in_place, std::forward<G>(g)),
          args_part<std::index_sequence_for<A...>, A...>(std::in_place, std::forward<U>(u)...)
    {
    }
    decltype(auto) operator()()
    {
        return this->apply(std::move(this->fn()));
    }
    /* The call cannot throw (f is noexcept for these arguments): its task
     * needs no catch (small_task). */
    static constexpr bool nothrow = std::is_nothrow_invocable_v<F, A...>;
};

/* A function known at compile time, as an empty callable: sf::spawn<fn>(a)
 * carries only a. */
template <auto Fn>
struct fn_constant {
    template <class... X>
    decltype(auto) operator()(X &&...x) const
        noexcept(std::is_nothrow_invocable_v<decltype(Fn), X...>)
    {
        return std::invoke(Fn, std::forward<X>(x)...);
    }
};

/* What a task of f(a...) returns, as the future holds it. */
template <class F, class... A>
using result_t = std::decay_t<std::invoke_result_t<std::decay_t<F>, std::decay_t<A>...>>;

/* T travels as the bytes of a void *: no allocation, no destructor to run. */
template <class T>
inline constexpr bool fits_pointer =
    sizeof(T) <= sizeof(void *) && alignof(T) <= alignof(void *) &&
    std::is_trivially_copyable_v<T>;

template <class T>
struct result_fits : std::bool_constant<fits_pointer<T>> {
};
template <>
struct result_fits<void> : std::true_type {
};
template <class T>
inline constexpr bool result_fits_pointer = result_fits<T>::value;

template <class T>
inline void *to_pointer(const T &v) noexcept
{
    void *p = nullptr;
    std::memcpy(&p, &v, sizeof v);
    return p;
}

/* The T whose bytes p holds. A copy of trivially copyable bytes makes the
 * object (C++20's implicit object creation; what every compiler does). */
template <class T>
inline T from_pointer(void *p) noexcept
{
    union bytes {
        void *p;
        T t;
        explicit bytes(void *q) noexcept : p(q) {}
    } u(p);
    return u.t;
}

/* The task function of a call that fits in its void * argument and whose
 * result fits in its void * value. */
template <class Call, class R>
void *small_task(void *arg)
{
    Call c = from_pointer<Call>(arg);
    if constexpr (Call::nothrow) {
        /* Nothing to catch, so no frame of ours stays below the call: the
         * compiler makes it a tail call, and the task's frames are the C
         * ones. The catch's frame is what a call that may throw pays, one
         * frame per task (docs/cpp.md, Cost). */
        if constexpr (std::is_void_v<R>) {
            c();
            return nullptr;
        } else {
            return to_pointer<R>(c());
        }
    } else {
        try {
            if constexpr (std::is_void_v<R>) {
                c();
                return nullptr;
            } else {
                return to_pointer<R>(c());
            }
        } catch (...) {
            fail_current();
            return nullptr;
        }
    }
}

/* ---- one heap block per task, for everything else -------------------------
 *
 * The block holds the call until the task has run it, then the result. Its
 * state says which is alive; the task writes it, the future reads it only
 * after the task ended (a get, or a wait that returned 0) or never started. */
enum : unsigned char { HOLDS_CALL, HOLDS_VALUE, HOLDS_NOTHING };

struct block_base {
    void (*destroy)(block_base *) noexcept; /* what is alive, then the block */
    unsigned char state = HOLDS_CALL;
};

template <class R>
struct result_block : block_base {
    alignas(R) unsigned char value[sizeof(R)];
    R &result() noexcept { return *std::launder(reinterpret_cast<R *>(value)); }
};

template <>
struct result_block<void> : block_base {
};

template <class Call, class R>
struct block final : result_block<R> {
    alignas(Call) unsigned char call_bytes[sizeof(Call)];
    Call &the_call() noexcept { return *std::launder(reinterpret_cast<Call *>(call_bytes)); }

    template <class... U>
    explicit block(U &&...u)
    {
        ::new (static_cast<void *>(call_bytes)) Call(std::in_place, std::forward<U>(u)...);
        this->destroy = &destroy_block;
    }

    static void destroy_block(block_base *base) noexcept
    {
        block *b = static_cast<block *>(base);
        if (b->state == HOLDS_CALL)
            b->the_call().~Call();
        if constexpr (!std::is_void_v<R>)
            if (b->state == HOLDS_VALUE)
                b->result().~R();
        delete b;
    }

    /* The task: runs the call, keeps the result, ends the call. Returns the
     * block (never NULL) when it succeeded, so that a get reads a NULL value
     * as a failure. */
    static void *run(void *arg)
    {
        block *b = static_cast<block *>(arg);
        try {
            if constexpr (std::is_void_v<R>)
                b->the_call()();
            else
                ::new (static_cast<void *>(b->value)) R(b->the_call()());
            b->the_call().~Call();
            b->state = std::is_void_v<R> ? HOLDS_NOTHING : HOLDS_VALUE;
            return b;
        } catch (...) {
            /* The call threw, or the result's constructor did: no result. */
            b->the_call().~Call();
            b->state = HOLDS_NOTHING;
            fail_current();
            return nullptr;
        }
    }
};

/* A future nobody got: cancel its task and wait until it ended (or never
 * started), then free the block and drop the reference. Its failure, if
 * nobody saw it, goes to the unhandled-failure hook at the release, as in C:
 * the wait here does not count as seeing it. */
inline void abandon(sf_future *f, block_base *b) noexcept
{
    if (sf_is_done(f) == 0 && sf_cancel(f) == 0 && sf_is_done(f) == 0 &&
        sf_wait_all(&f, 1, INFINITY) != 0) {
        /* Not done and cannot be waited for (a cycle of gets, a handle from
         * a runtime that is gone): the task may still use its block, which
         * is left to leak rather than freed under it. */
        b = nullptr;
    }
    if (b != nullptr)
        b->destroy(b);
    sf_release(f);
}

/* The failure of f's task (code from sf_wait()), as an sf::error; f is
 * released (and b freed) before the throw. */
[[noreturn]] inline void fail_future(sf_future *f, block_base *b, int code)
{
    const char *m = sf_error_message(f);
    std::string msg = m ? m : "";
    if (b != nullptr)
        b->destroy(b);
    sf_release(f);
    throw error(code, msg);
}

/* A get returned NULL: a failure, or a task that returned NULL. sf_wait()
 * of the done future tells them apart at once: returns the NULL value, or
 * throws the failure. Out of line, so the get's value stays in a register. */
inline void *null_value(sf_future *f, block_base *b)
{
    void *r = nullptr;
    int rc = sf_wait(f, &r);
    if (rc != 0)
        fail_future(f, b, rc);
    return r;
}

template <class T>
struct launch;

} // namespace detail

/*
 * sf::future<T>: the one owner of an sf_future and of the task's block. Move
 * only. get() gives the result once (valid() is false afterwards); a future
 * destroyed without a get cancels and waits for its task (above). Like
 * std::future, one object is not to be used by two threads at once; the
 * task may run on any thread.
 */
template <class T>
class [[nodiscard]] future {
  public:
    using value_type = T;

    future() noexcept = default;
    future(future &&o) noexcept : f_(std::exchange(o.f_, nullptr)), b_(std::exchange(o.b_, nullptr))
    {
    }
    future &operator=(future &&o) noexcept
    {
        if (this != &o) {
            reset();
            f_ = std::exchange(o.f_, nullptr);
            b_ = std::exchange(o.b_, nullptr);
        }
        return *this;
    }
    future(const future &) = delete;
    future &operator=(const future &) = delete;
    ~future() { reset(); }

    /* Holds a task whose result get() has not taken yet. */
    bool valid() const noexcept { return f_ != nullptr; }

    /* The task's result, as sf_get() gives it: runs the task here if nobody
     * started it, else helps until it is done. Throws sf::error when it
     * failed, was cancelled or the get failed (sf_get()'s codes); the
     * future is empty afterwards either way. */
    T get() { return take(&sf_get); }
    /* The same with sf_get_isolated(): helps only with this task's work. */
    T get_isolated() { return take(&sf_get_isolated); }

    /* Waits until the task is done, leaving its outcome to get(). Runs it
     * here if nobody started it, as a get does. Throws sf::error (EDEADLK,
     * EINVAL) if it cannot wait. */
    void wait() const
    {
        int rc = f_ ? sf_wait_all(&f_, 1, INFINITY) : EINVAL;
        if (rc != 0)
            detail::throw_code(rc, "sf::future::wait");
    }
    /* wait() with a deadline: true once done, false when `seconds` passed
     * first. A wait with a deadline never runs a task on this thread
     * (sf_wait_for()): at SF_THREADS=1 a task nobody started waits for a get. */
    bool wait_for(double seconds) const
    {
        int rc = f_ ? sf_wait_all(&f_, 1, seconds) : EINVAL;
        if (rc == ETIMEDOUT)
            return false;
        if (rc != 0)
            detail::throw_code(rc, "sf::future::wait_for");
        return true;
    }
    template <class Rep, class Period>
    bool wait_for(const std::chrono::duration<Rep, Period> &d) const
    {
        return wait_for(std::chrono::duration<double>(d).count());
    }

    /* The task has finished (a get would not run or wait for anything). */
    bool is_done() const noexcept { return f_ != nullptr && sf_is_done(f_) == 1; }

    /* sf_cancel(): a task not started never runs, a running one is asked to
     * stop (sf::cancelled()). get() then throws sf::error(ECANCELED), unless
     * the running task never asked. False if it was done already. */
    bool cancel() noexcept { return f_ != nullptr && sf_cancel(f_) == 0; }

    /* The handle, for the C calls that take one (sf_wait_any, ...); still
     * owned by this future. */
    sf_future *native_handle() const noexcept { return f_; }

  private:
    template <class>
    friend struct detail::launch;
    template <class>
    friend class promise;

    future(sf_future *f, detail::block_base *b) noexcept : f_(f), b_(b) {}

    void reset() noexcept
    {
        if (f_ != nullptr)
            detail::abandon(std::exchange(f_, nullptr), std::exchange(b_, nullptr));
    }

    T take(void *(*get)(sf_future *))
    {
        sf_future *f = f_;
        if (f == nullptr)
            throw error(EINVAL, "sf::future::get: the future holds no task");
        detail::block_base *b = b_;
        f_ = nullptr;
        b_ = nullptr;
        void *r = get(f);
        if (r == nullptr)
            r = detail::null_value(f, b);
        if (b == nullptr) {
            sf_release(f);
            if constexpr (std::is_void_v<T>)
                return;
            else if constexpr (detail::fits_pointer<T>)
                return detail::from_pointer<T>(r);
            else
                std::terminate(); /* such a T always has a block (launch) */
        } else {
            /* Frees the block and drops f however the result leaves. */
            struct cleanup {
                sf_future *f;
                detail::block_base *b;
                ~cleanup()
                {
                    b->destroy(b);
                    sf_release(f);
                }
            } c{f, b};
            if constexpr (!std::is_void_v<T>)
                return std::move(static_cast<detail::result_block<T> *>(b)->result());
        }
    }

    /* mutable: the const waits pass its address to sf_wait_all(). */
    mutable sf_future *f_ = nullptr;
    detail::block_base *b_ = nullptr;
};

namespace detail {

/* Makes the task of f(a...) with submit(fn, arg) (sf_do, sf_batch_do) and
 * returns its future. */
template <class R>
struct launch {
    template <class Submit, class F, class... A>
    static future<R> go(Submit submit, F &&f, A &&...a)
    {
        using Call = call<std::decay_t<F>, std::decay_t<A>...>;
        if constexpr (fits_pointer<Call> && result_fits_pointer<R>) {
            /* The fast path: the call is the argument, the result the value. */
            sf_future *h =
                submit(&small_task<Call, R>,
                       to_pointer(Call(std::in_place, std::forward<F>(f), std::forward<A>(a)...)));
            if (h == nullptr)
                throw_code(errno, "sf::spawn");
            return future<R>(h, nullptr);
        } else {
            auto *b = new block<Call, R>(std::forward<F>(f), std::forward<A>(a)...);
            sf_future *h = submit(&block<Call, R>::run, b);
            if (h == nullptr) {
                int e = errno;
                b->destroy(b);
                throw_code(e, "sf::spawn");
            }
            return future<R>(h, b);
        }
    }
};

} // namespace detail

/*
 * sf::spawn(f, a...): queues f(a...) as a task (sf_do(): lazy, nothing runs
 * until a get) and returns its future. f is any callable - a lambda, a
 * function pointer, a functor, one holding move-only things - and f and a
 * are decayed and moved into the task, which calls them once as rvalues.
 * Free of allocation when the callable with its arguments, and the result,
 * each fit in a pointer and are trivially copyable (a lambda capturing one
 * long, int or pointer, or a reference). Throws sf::error (ENOMEM, EAGAIN:
 * sf_do()'s) or std::bad_alloc.
 */
template <class F, class... A>
[[nodiscard]] future<detail::result_t<F, A...>> spawn(F &&f, A &&...a)
{
    return detail::launch<detail::result_t<F, A...>>::go(&sf_do, std::forward<F>(f),
                                                          std::forward<A>(a)...);
}

/* sf::spawn<fn>(a...): fn known at compile time carries no pointer, so a
 * function of one pointer-sized argument spawns with no allocation. */
template <auto Fn, class... A>
[[nodiscard]] auto spawn(A &&...a)
{
    return spawn(detail::fn_constant<Fn>{}, std::forward<A>(a)...);
}

/* The deps of a continuation: handles of futures that stay their owners'
 * (sf::after(x, y) makes one). */
template <std::size_t N>
struct deps {
    sf_future *h[N == 0 ? 1 : N];
};
template <class... U>
deps<sizeof...(U)> after(const future<U> &...f) noexcept
{
    return {{f.native_handle()...}};
}

/*
 * sf::do_after(sf::after(x, y), f, a...): a continuation (sf_do_after()):
 * f(a...) runs on the pool once every dep is done - succeeded, failed or
 * cancelled - though nobody gets it, and holds no thread until then. The
 * deps stay their owners' futures (f may get them, if nothing else does
 * meanwhile); libsf holds its own reference to each. f and a as for
 * spawn(). Throws sf::error (EINVAL: an empty dep; ENOMEM, EAGAIN) or
 * std::bad_alloc.
 */
template <std::size_t N, class F, class... A>
[[nodiscard]] future<detail::result_t<F, A...>> do_after(const deps<N> &d, F &&f, A &&...a)
{
    sf_future *const *h = d.h;
    return detail::launch<detail::result_t<F, A...>>::go(
        [h](void *(*fn)(void *), void *arg) { return sf_do_after(h, (int)N, fn, arg); },
        std::forward<F>(f), std::forward<A>(a)...);
}

/*
 * sf::task<T>: a task kept in the caller's frame (sf_task; docs/
 * caller-storage.md): no heap, nothing to release; for fork-join. Neither
 * copied nor moved. The callable and its arguments live in the task object
 * (at most Inline bytes, checked when compiling), as does a result that does
 * not fit in a pointer. The rules of sf_task hold: only the thread that
 * spawned it may get it, and it must before the object goes away - the
 * destructor gets (so runs) a task nobody got and drops its result or
 * failure, so leaving a scope by an exception stays within them.
 *
 *     sf::task<long> t([=] { return fib(n - 1); });
 *     long b = fib(n - 2);
 *     return t.get() + b;
 */
template <class T, std::size_t Inline = 4 * sizeof(void *)>
class task {
  public:
    using value_type = T;

    task() noexcept = default;
    /* Queues f(a...) as spawn() does, in this object. */
    template <class F, class... A,
              class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, task>>>
    explicit task(F &&f, A &&...a)
    {
        spawn(std::forward<F>(f), std::forward<A>(a)...);
    }
    task(const task &) = delete;
    task &operator=(const task &) = delete;
    ~task()
    {
        if (mode_ != EMPTY)
            drop();
    }

    /* Queues f(a...) (sf_task_do()). The task must not hold a queued task
     * (spawned and not got): that throws sf::error(EBUSY). Throws
     * sf::error(ENOMEM, EAGAIN) as sf_task_do() fails. */
    template <class F, class... A>
    void spawn(F &&f, A &&...a)
    {
        using Call = detail::call<std::decay_t<F>, std::decay_t<A>...>;
        static_assert(std::is_convertible_v<detail::result_t<F, A...>, T> ||
                          std::is_void_v<T>,
                      "sf::task<T>: the call's result does not convert to T");
        if (mode_ != EMPTY)
            respawn();
        if constexpr (detail::fits_pointer<Call> && detail::result_fits_pointer<T>) {
            if (sf_task_do(&t_, &detail::small_task<Call, T>,
                           detail::to_pointer(Call(std::in_place, std::forward<F>(f),
                                                   std::forward<A>(a)...))) != 0)
                detail::throw_code(errno, "sf::task::spawn");
            mode_ = QUEUED_FAST;
        } else {
            static_assert(sizeof(Call) <= Inline && alignof(Call) <= alignof(std::max_align_t),
                          "sf::task: the callable and its arguments exceed the inline storage; "
                          "raise sf::task's second parameter or use sf::spawn");
            ::new (static_cast<void *>(call_)) Call(std::in_place, std::forward<F>(f),
                                                    std::forward<A>(a)...);
            destroy_call_ = [](void *p) noexcept { static_cast<Call *>(p)->~Call(); };
            state_ = detail::HOLDS_CALL;
            mode_ = HOLDING; /* the call is ours to end until the task is queued */
            if (sf_task_do(&t_, &run<Call>, this) != 0) {
                int e = errno;
                clear();
                detail::throw_code(e, "sf::task::spawn");
            }
            mode_ = QUEUED;
        }
    }

    /* The result (sf_task_get()): runs the task here if nobody started it.
     * Throws sf::error when it failed or was cancelled (message from
     * sf_task_error_message()), or the get failed (EPERM: another thread's
     * task; EINVAL: none queued). */
    T get()
    {
        if (mode_ != QUEUED_FAST)
            return get_slow();
        /* The fast path: nothing in this object but the sf_task. */
        mode_ = EMPTY;
        void *r = sf_task_get(&t_);
        if (r == nullptr)
            r = null_value();
        if constexpr (std::is_void_v<T>)
            return;
        else if constexpr (detail::fits_pointer<T>)
            return detail::from_pointer<T>(r);
        else
            std::terminate(); /* such a T never takes the fast path */
    }

  private:
    /* mode_: what the object holds. EMPTY: nothing (never spawned, or got);
     * QUEUED_FAST: a queued task whose call and result ride in void *s;
     * QUEUED: a queued task whose call (state_) is in call_; HOLDING: no
     * queued task, but call_ or value_ holds something (state_). */
    enum : unsigned char { EMPTY, QUEUED_FAST, QUEUED, HOLDING };

    /* A task nobody got: got here (the sf_task rule), its outcome dropped. */
    void drop() noexcept
    {
        if (mode_ == QUEUED_FAST || mode_ == QUEUED) {
            sf_task_get(&t_);
            mode_ = mode_ == QUEUED ? HOLDING : EMPTY; /* run() left state_ */
        }
        clear();
    }

    void respawn()
    {
        if (mode_ == QUEUED_FAST || mode_ == QUEUED)
            throw error(EBUSY, "sf::task::spawn: the task holds a task not got yet");
        clear();
    }

    /* A fast get returned NULL: a failure, or a task that returned NULL. A
     * second get returns the same, with errno the code only for a failure. */
    void *null_value()
    {
        errno = 0;
        void *r = sf_task_get(&t_);
        if (errno != 0)
            failed(errno);
        return r;
    }

    T get_slow()
    {
        if (mode_ != QUEUED)
            throw error(EINVAL, "sf::task::get: no task queued");
        mode_ = HOLDING;
        if (sf_task_get(&t_) == nullptr) /* run() returns this object on success alone */
            failed(errno);
        struct cleanup {
            task *t;
            ~cleanup() { t->clear(); }
        } c{this};
        if constexpr (!std::is_void_v<T>)
            return std::move(*std::launder(reinterpret_cast<T *>(value_)));
    }

    template <class Call>
    static void *run(void *arg)
    {
        task *t = static_cast<task *>(arg);
        Call &c = *std::launder(reinterpret_cast<Call *>(t->call_));
        try {
            if constexpr (std::is_void_v<T>)
                c();
            else
                ::new (static_cast<void *>(t->value_)) T(c());
            c.~Call();
            t->state_ = std::is_void_v<T> ? detail::HOLDS_NOTHING : detail::HOLDS_VALUE;
            return t;
        } catch (...) {
            c.~Call();
            t->state_ = detail::HOLDS_NOTHING;
            detail::fail_current();
            return nullptr;
        }
    }

    [[noreturn]] void failed(int code)
    {
        const char *m = sf_task_error_message();
        std::string msg = m ? m : "";
        clear();
        throw error(code, msg);
    }

    /* Ends whatever call_ and value_ hold; no task is queued. */
    void clear() noexcept
    {
        if (mode_ == HOLDING) {
            if (state_ == detail::HOLDS_CALL)
                destroy_call_(call_);
            if constexpr (!std::is_void_v<T>)
                if (state_ == detail::HOLDS_VALUE)
                    std::launder(reinterpret_cast<T *>(value_))->~T();
        }
        mode_ = EMPTY;
    }

    using value_storage = std::conditional_t<std::is_void_v<T>, char, T>;

    sf_task t_;
    unsigned char mode_ = EMPTY;
    unsigned char state_ = detail::HOLDS_NOTHING;
    void (*destroy_call_)(void *) noexcept = nullptr;
    alignas(std::max_align_t) unsigned char call_[Inline];
    alignas(value_storage) unsigned char value_[sizeof(value_storage)];
};

template <class F, class... A>
task(F &&, A &&...) -> task<detail::result_t<F, A...>>;

namespace detail {

template <class F>
void for_body(long i, void *ctx)
{
    try {
        (*static_cast<F *>(ctx))(i);
    } catch (...) {
        fail_current();
    }
}

template <class F>
void for_range_body(long lo, long hi, void *ctx)
{
    try {
        (*static_cast<F *>(ctx))(lo, hi);
    } catch (...) {
        fail_current();
    }
}

/* A loop that returned -1 with errno `code`: a body's failure brings its
 * message (sf_task_error_message()); libsf's own errors have none. */
[[noreturn]] inline void loop_failed(int code, const char *what)
{
    const char *m = sf_task_error_message();
    if (m != nullptr)
        throw error(code, m);
    throw_code(code, what);
}

} // namespace detail

/*
 * sf::for_each(from, to, f): f(i) for every i of [from, to) exactly once, in
 * parallel (sf_for(); docs/loops.md). With iterators (random access) it
 * calls f(*it) for each element. An exception in f fails the loop - no index
 * starts after it - and for_each throws it as sf::error, as it does any
 * failure of sf_for().
 */
template <class I, class F>
void for_each(I first, I last, F &&f)
{
    if constexpr (std::is_integral_v<I>) {
        auto body = [&f](long i) { f(static_cast<I>(i)); };
        if (sf_for(static_cast<long>(first), static_cast<long>(last), &detail::for_body<decltype(body)>,
                   &body) != 0)
            detail::loop_failed(errno, "sf::for_each");
    } else {
        static_assert(std::is_base_of_v<std::random_access_iterator_tag,
                                        typename std::iterator_traits<I>::iterator_category>,
                      "sf::for_each: needs random-access iterators or integers");
        auto body = [&f, first](long i) { f(first[i]); };
        if (sf_for(0, static_cast<long>(last - first), &detail::for_body<decltype(body)>, &body) !=
            0)
            detail::loop_failed(errno, "sf::for_each");
    }
}

/* sf::for_each_range(from, to, grain, f): f(lo, hi) over disjoint sub-ranges
 * covering [from, to), each at most grain indices (0: libsf's choice);
 * sf_for_range(). Failures as for_each. */
template <class F>
void for_each_range(long from, long to, long grain, F &&f)
{
    using G = std::remove_reference_t<F>;
    if (sf_for_range(from, to, grain, &detail::for_range_body<G>,
                     const_cast<void *>(static_cast<const void *>(std::addressof(f)))) != 0)
        detail::loop_failed(errno, "sf::for_each_range");
}

/*
 * sf::reduce(from, to, grain, identity, leaf, join): sf_reduce(), the
 * deterministic reduce of docs/loops.md: chunks of grain indices, each
 * accumulator a copy of identity, leaf(lo, hi, T &acc) adding a chunk,
 * join(T &acc, const T &right) adding right into acc, joined as a balanced
 * tree: the same bits at every SF_THREADS. T is trivially copyable (libsf
 * copies accumulators as bytes). Returns the root; throws sf::error as
 * for_each does.
 */
template <class T, class Leaf, class Join>
T reduce(long from, long to, long grain, const T &identity, Leaf &&leaf, Join &&join)
{
    static_assert(std::is_trivially_copyable_v<T>,
                  "sf::reduce: the accumulator is copied as bytes: T must be trivially copyable");
    struct ctx_t {
        std::remove_reference_t<Leaf> *leaf;
        std::remove_reference_t<Join> *join;
    } ctx{std::addressof(leaf), std::addressof(join)};
    auto leaf_fn = [](long lo, long hi, void *acc, void *c) {
        try {
            (*static_cast<ctx_t *>(c)->leaf)(lo, hi, *static_cast<T *>(acc));
        } catch (...) {
            detail::fail_current();
        }
    };
    auto join_fn = [](void *acc, const void *right, void *c) {
        try {
            (*static_cast<ctx_t *>(c)->join)(*static_cast<T *>(acc), *static_cast<const T *>(right));
        } catch (...) {
            detail::fail_current();
        }
    };
    alignas(T) unsigned char out[sizeof(T)];
    if (sf_reduce(from, to, grain, out, std::addressof(identity), sizeof(T), leaf_fn, join_fn,
                  &ctx) != 0)
        detail::loop_failed(errno, "sf::reduce");
    return *std::launder(reinterpret_cast<T *>(out));
}

/* sf::transform_reduce(from, to, grain, identity, map, op): reduce() of
 * op(acc, map(i)), chunks joined with op(acc, right). */
template <class T, class Map, class Op>
T transform_reduce(long from, long to, long grain, const T &identity, Map &&map, Op &&op)
{
    return reduce(
        from, to, grain, identity,
        [&](long lo, long hi, T &acc) {
            for (long i = lo; i < hi; i++)
                acc = op(acc, map(i));
        },
        [&](T &acc, const T &right) { acc = op(acc, right); });
}

/*
 * sf::promise<T>: the setter's side of an sf_promise(); get_future() (once)
 * gives the getters' side. T is void, or fits a pointer and is trivially
 * copyable: a set allocates nothing, takes no lock and registers no thread
 * (sf_promise_set()), so an audio callback may set one; pass a pointer for
 * anything bigger. Move only; set it from any thread. Destroyed unset, it
 * fails with broken_promise_code, so no getter waits for ever.
 */
template <class T>
class promise {
    static_assert(detail::result_fits_pointer<T>,
                  "sf::promise<T>: T must be void or fit a pointer and be trivially copyable");

  public:
    /* Throws sf::error (ENOMEM, EAGAIN) as sf_promise() fails. */
    promise() : p_(sf_promise())
    {
        if (p_ == nullptr)
            detail::throw_code(errno, "sf::promise");
    }
    promise(promise &&o) noexcept
        : p_(std::exchange(o.p_, nullptr)), taken_(o.taken_), done_(o.done_)
    {
    }
    promise &operator=(promise &&o) noexcept
    {
        if (this != &o) {
            end();
            p_ = std::exchange(o.p_, nullptr);
            taken_ = o.taken_;
            done_ = o.done_;
        }
        return *this;
    }
    promise(const promise &) = delete;
    promise &operator=(const promise &) = delete;
    ~promise() { end(); }

    /* The future its getters get; once. Throws sf::error(EALREADY) after. */
    future<T> get_future()
    {
        if (p_ == nullptr || taken_)
            throw error(EALREADY, "sf::promise::get_future: the future was taken already");
        taken_ = true;
        return future<T>(p_, nullptr);
    }

    /* Completes it with v: true, or false (nothing changes) if it was
     * completed already or cancelled through its future (ECANCELED). */
    template <class U = T, class = std::enable_if_t<!std::is_void_v<U>>>
    bool set_value(const U &v) noexcept
    {
        return can_complete() && completed(sf_promise_set(p_, detail::to_pointer<T>(v)));
    }
    template <class U = T, class = std::enable_if_t<std::is_void_v<U>>>
    bool set_value() noexcept
    {
        return can_complete() && completed(sf_promise_set(p_, nullptr));
    }
    /* Fails it with code (> 0; else false and nothing changes) and message
     * (may be NULL): getters throw sf::error(code, message). False as
     * set_value(). Allocates the message. */
    bool set_error(int code, const char *message) noexcept
    {
        if (code <= 0 || !can_complete())
            return false;
        return completed(message ? sf_promise_fail(p_, code, "%s", message)
                                 : sf_promise_fail(p_, code, nullptr));
    }

  private:
    /* The setter makes one call per promise (sf.h); after it the promise
     * may be freed by its holder, so no second call is made. */
    bool can_complete() const noexcept { return p_ != nullptr && !done_; }
    bool completed(int rc) noexcept
    {
        done_ = true; /* the setter's call was made, whatever it returned */
        return rc == 0;
    }

    void end() noexcept
    {
        if (p_ == nullptr)
            return;
        sf_future *p = std::exchange(p_, nullptr);
        if (!done_) {
            /* The setter's call, made now: a getter sees the broken promise;
             * one never handed out is completed quietly. */
            if (taken_)
                sf_promise_fail(p, broken_promise_code, "sf::promise destroyed without a value");
            else
                sf_promise_set(p, nullptr);
        }
        if (!taken_)
            sf_release(p); /* the holder's reference nobody took */
    }

    sf_future *p_;
    bool taken_ = false;
    bool done_ = false;
};

/*
 * sf::batch: a fair batch (sf_batch_new(); docs/batches.md) whose tasks start
 * as they are added. Move only; the destructor closes it (sf_batch_close():
 * its pending tasks still run and the futures stay valid).
 */
class batch {
  public:
    /* Throws sf::error (ENOMEM, EAGAIN) as sf_batch_new() fails. */
    batch() : b_(sf_batch_new())
    {
        if (b_ == nullptr)
            detail::throw_code(errno, "sf::batch");
    }
    batch(batch &&o) noexcept : b_(std::exchange(o.b_, nullptr)) {}
    batch &operator=(batch &&o) noexcept
    {
        if (this != &o) {
            sf_batch_close(b_);
            b_ = std::exchange(o.b_, nullptr);
        }
        return *this;
    }
    batch(const batch &) = delete;
    batch &operator=(const batch &) = delete;
    ~batch() { sf_batch_close(b_); }

    /* Adds f(a...) and submits it at once (sf_batch_do()), as spawn() makes
     * a task. Throws sf::error (EPIPE: closed; ENOMEM, EAGAIN). */
    template <class F, class... A>
    [[nodiscard]] future<detail::result_t<F, A...>> spawn(F &&f, A &&...a)
    {
        sf_batch *b = b_;
        return detail::launch<detail::result_t<F, A...>>::go(
            [b](void *(*fn)(void *), void *arg) { return sf_batch_do(b, fn, arg); },
            std::forward<F>(f), std::forward<A>(a)...);
    }

    /* Until no task of the batch is unfinished; runs them here as
     * sf_batch_wait() does. Throws sf::error (EDEADLK, ...). */
    void wait()
    {
        if (sf_batch_wait(b_) != 0)
            detail::throw_code(errno, "sf::batch::wait");
    }
    /* wait() with a deadline: false when it passed first. */
    bool wait_for(double seconds)
    {
        if (sf_batch_wait_for(b_, seconds) == 0)
            return true;
        if (errno == ETIMEDOUT)
            return false;
        detail::throw_code(errno, "sf::batch::wait_for");
    }

    sf_batch *native_handle() const noexcept { return b_; }

  private:
    sf_batch *b_;
};

} // namespace sf

#endif /* SF_HPP */
