/*
 * sound.h - the audio samples' sound files, read and written by libsndfile
 * (see sound.c).
 *
 * Samples are doubles in [-1, 1], frames interleaved (left, right for
 * stereo). Every call that can fail returns -1 (or NULL) and points *why at
 * a one-line reason to print after "program: path: "; the text lives until
 * the calling thread's next call into this file (each thread has its own,
 * so samples/stream's reader thread may fail while its main thread writes).
 */
#ifndef SAMPLES_AUDIO_SOUND_H
#define SAMPLES_AUDIO_SOUND_H

#include <stddef.h>

/*
 * The libsndfile format (major | subtype) to write `path` in: the major
 * format whose extension is path's (ignoring case; ".aif" and ".ogg" are
 * taken as libsndfile's "aiff" and "oga"), WAV when the file name has no
 * extension (/dev/null); 16-bit PCM where that format holds it at
 * `channels` and `rate`, else the first subtype libsndfile accepts there
 * (Vorbis for .oga). Returns 0 and *why when no format fits.
 */
int sound_format(const char *path, int channels, int rate, const char **why);

typedef struct sound_writer {
    void *sf; /* SNDFILE *: this header leaves sndfile.h to sound.c */
    int fd;
    int channels;
} sound_writer;

/* Creates (or truncates) path as a file of `format` (from sound_format).
 * Returns 0, or -1 with *why (open's error, or libsndfile's). */
int sound_create(sound_writer *w, const char *path, int format, int channels, int rate,
                 const char **why);

/* Appends n frames, each sample clipped to [-1, 1] first (libsndfile
 * scales by 32767 and rounds to nearest for 16-bit PCM). Returns 0 or -1
 * with *why. */
int sound_write(sound_writer *w, const double *x, size_t n, const char **why);

/* Starts a 16-bit PCM WAV of `channels` at `rate` Hz on the open descriptor
 * fd (samples/stream: stdout), which sound_close() closes. On a regular file
 * libsndfile writes it, with exact sizes once closed. libsndfile writes no
 * WAV to a pipe (it must seek back to write the sizes), so on anything else
 * the 44-byte header is written here with the sizes a stream of unknown
 * length gets (RIFF 0xFFFFFFFF, data 0xFFFFFFFF - 36 rounded down to whole
 * frames, as sox and ffmpeg write to a pipe: readers take the data to the
 * end of the stream), and libsndfile writes the frames after it as raw
 * little-endian 16-bit PCM: the same samples, rounded as in a file.
 * Returns 0, or -1 with *why (write's error, or libsndfile's). */
int sound_create_fd(sound_writer *w, int fd, int channels, int rate, const char **why);

/* Finishes the file (libsndfile writes the header's sizes now) and closes
 * it; w is closed even on failure. Returns 0 or -1 with *why (why may be
 * NULL: closing after another failure). */
int sound_close(sound_writer *w, const char **why);

/*
 * Reads at most max_frames frames of any file libsndfile reads, mono or
 * stereo, as `channels` (1 or 2) channels at `rate` Hz: mono goes to both
 * sides, stereo to mono as the mean of its sides; another rate is
 * resampled by linear interpolation (no anti-aliasing filter: a demo's
 * input, not a mastering tool). Returns the malloc'd frames, their count in
 * *frames (>= 1), or NULL with *why (no such file, a format libsndfile does
 * not read, more than two channels, no frames, no memory).
 */
double *sound_read(const char *path, int channels, int rate, size_t max_frames, size_t *frames,
                   const char **why);

/* A sound read block by block from an open descriptor (samples/stream:
 * stdin, a pipe or a file), in its own channels and rate. */
typedef struct sound_reader {
    void *sf;     /* SNDFILE * */
    int channels; /* the file's, >= 1 */
    int rate;     /* the file's, Hz */
} sound_reader;

/* Opens fd (left open by sound_reader_close) for reading any format
 * libsndfile reads, seekable or not. Returns 0, or -1 with *why
 * (libsndfile's: an empty input is "Format not recognised"). */
int sound_reader_open(sound_reader *r, int fd, const char **why);

/* Reads up to n frames into x (n * channels doubles, interleaved), as many
 * as there are: fewer than n only at the end of the input. Returns the count
 * (0 at the end), or -1 with *why (a read error: the frames read before it
 * are lost). */
long sound_reader_read(sound_reader *r, double *x, size_t n, const char **why);

void sound_reader_close(sound_reader *r);

#endif
