trace: <stdin>, 3 threads, span 0.125 ms

function                            tasks   total ms    self ms  self%
fft                                     3      0.081      0.062   16.5
mix                                     2      0.086      0.040   10.7
synth                                   2      0.016      0.016    4.3
all                                     7                 0.118   31.5

total: wall time in the function's tasks (a nested call of the same function counted once);
self: less the tasks they ran nested, the time their fiber was parked and their sleeps;
self%: of the span times the threads
