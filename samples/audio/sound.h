/*
 * sound.h - the audio samples' sound files, read and written by libsndfile
 * (see sound.c).
 *
 * Samples are doubles in [-1, 1], frames interleaved (left, right for
 * stereo). Every call that can fail returns -1 (or NULL) and points *why at
 * a one-line reason to print after "program: path: "; the text lives until
 * the next call into this file.
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

#endif
