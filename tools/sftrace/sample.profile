trace: <stdin>, 2 threads, span 0.125 ms

function                            tasks   total ms    self ms  self%
(unnamed)                               6      0.129      0.119   47.6
all                                     6                 0.119   47.6

total: wall time in the function's tasks (a nested call of the same function counted once);
self: less the tasks they ran nested and the time their fiber was parked (sleeps count);
self%: of the span times the threads
