trace: <stdin>, 2 threads, span 0.125 ms

function                            tasks   total ms    self ms  self%
(unnamed)                               6      0.129      0.110   44.0
all                                     6                 0.110   44.0

total: wall time in the function's tasks (a nested call of the same function counted once);
self: less the tasks they ran nested, the time their fiber was parked and their sleeps;
self%: of the span times the threads
