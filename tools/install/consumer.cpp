/*
 * consumer.cpp - the C++ program make installcheck builds against the
 * installed sf.hpp (tools/install/installcheck): consumer.c's work through
 * sf::spawn, sf::for_each and an exception read back as sf::error, printing
 * the same line, which the check compares exactly.
 */
#include <cerrno>
#include <cstdio>
#include <string>

#include <sf.hpp>

static long fib(long n)
{
    if (n < 2)
        return n;
    auto a = sf::spawn([n] { return fib(n - 1); });
    long b = fib(n - 2);
    return a.get() + b;
}

int main()
{
    long fib20 = sf::spawn(fib, 20L).get();
    long squares[100];
    sf::for_each(0L, 100L, [&squares](long i) { squares[i] = i * i; });
    long sum = 0;
    for (long s : squares)
        sum += s;
    const char *code = "?";
    std::string message = "(none)";
    try {
        sf::spawn([] { throw sf::error(ERANGE, "out of range"); }).get();
    } catch (const sf::error &e) {
        code = e.code() == ERANGE ? "ERANGE" : "?";
        message = e.what();
    }
    std::printf("fib(20) = %ld, sum of squares = %ld, failure %s: %s\n", fib20, sum, code,
                message.c_str());
    sf_shutdown();
    return 0;
}
