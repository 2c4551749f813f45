/*
 * sound.c - sound files through libsndfile (see sound.h).
 *
 * The descriptors are opened here, not by sf_open, so that a file that
 * cannot be opened is reported with open's errno ("No such file or
 * directory") rather than libsndfile's wording of it; libsndfile is handed
 * the descriptor and never closes it (close_desc false), so every path
 * closes it exactly once, here.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "sound.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sndfile.h>

#define CHUNK 4096 /* frames per libsndfile call */

/* The formatted reasons *why points at, one per thread: the samples report
 * one error and exit, and samples/stream's reader thread reads while its
 * main thread writes. */
static _Thread_local char reason[256];

/* libsndfile's message without its trailing period, for "prog: path: why". */
static const char *sf_reason(SNDFILE *f)
{
    snprintf(reason, sizeof reason, "%s", sf_strerror(f));
    size_t n = strlen(reason);
    while (n > 0 && (reason[n - 1] == '.' || reason[n - 1] == '\n' || reason[n - 1] == ' '))
        reason[--n] = '\0';
    return reason;
}

int sound_format(const char *path, int channels, int rate, const char **why)
{
    const char *base = strrchr(path, '/');
    base = base != NULL ? base + 1 : path;
    const char *ext = strrchr(base, '.');
    if (ext == NULL || ext == base) /* no extension, or a dot file */
        ext = "wav";
    else
        ext++;
    /* libsndfile's extensions for these two are not the usual ones. */
    if (strcasecmp(ext, "aif") == 0)
        ext = "aiff";
    else if (strcasecmp(ext, "ogg") == 0)
        ext = "oga";
    int majors = 0, subtypes = 0;
    sf_command(NULL, SFC_GET_FORMAT_MAJOR_COUNT, &majors, sizeof majors);
    sf_command(NULL, SFC_GET_FORMAT_SUBTYPE_COUNT, &subtypes, sizeof subtypes);
    /* The first major format with the extension: WAV before WAVEX for .wav. */
    for (int k = 0; k < majors; k++) {
        SF_FORMAT_INFO major = {.format = k};
        if (sf_command(NULL, SFC_GET_FORMAT_MAJOR, &major, sizeof major) != 0 ||
            major.extension == NULL || strcasecmp(major.extension, ext) != 0)
            continue;
        SF_INFO info = {.samplerate = rate, .channels = channels,
                        .format = major.format | SF_FORMAT_PCM_16};
        if (sf_format_check(&info))
            return info.format;
        for (int j = 0; j < subtypes; j++) {
            SF_FORMAT_INFO sub = {.format = j};
            if (sf_command(NULL, SFC_GET_FORMAT_SUBTYPE, &sub, sizeof sub) != 0)
                continue;
            info.format = major.format | sub.format;
            if (sf_format_check(&info))
                return info.format;
        }
        snprintf(reason, sizeof reason, "libsndfile writes no %s file of %d channels at %d Hz",
                 major.name, channels, rate);
        *why = reason;
        return 0;
    }
    snprintf(reason, sizeof reason, "libsndfile writes no format with the extension .%s", ext);
    *why = reason;
    return 0;
}

int sound_create(sound_writer *w, const char *path, int format, int channels, int rate,
                 const char **why)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        *why = strerror(errno);
        return -1;
    }
    SF_INFO info = {.samplerate = rate, .channels = channels, .format = format};
    SNDFILE *f = sf_open_fd(fd, SFM_WRITE, &info, SF_FALSE);
    if (f == NULL) {
        *why = sf_reason(NULL);
        close(fd);
        return -1;
    }
    *w = (sound_writer){f, fd, channels};
    return 0;
}

/* Little-endian fields of the streamed header. */
static void le16(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)(v & 0xff);
    p[1] = (unsigned char)(v >> 8 & 0xff);
}

static void le32(unsigned char *p, uint32_t v)
{
    le16(p, v & 0xffff);
    le16(p + 2, v >> 16);
}

int sound_create_fd(sound_writer *w, int fd, int channels, int rate, const char **why)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        *why = strerror(errno);
        return -1;
    }
    SF_INFO info = {.samplerate = rate, .channels = channels,
                    .format = SF_FORMAT_WAV | SF_FORMAT_PCM_16};
    if (!S_ISREG(st.st_mode)) {
        /* The canonical 44-byte PCM header (RIFF, fmt of 16 bytes, data),
         * its two sizes those of a stream of unknown length. */
        const unsigned align = 2u * (unsigned)channels;
        unsigned char h[44];
        memcpy(h, "RIFF", 4);
        le32(h + 4, 0xffffffffu);
        memcpy(h + 8, "WAVEfmt ", 8);
        le32(h + 16, 16);
        le16(h + 20, 1); /* PCM */
        le16(h + 22, (unsigned)channels);
        le32(h + 24, (uint32_t)rate);
        le32(h + 28, (uint32_t)rate * align);
        le16(h + 32, align);
        le16(h + 34, 16);
        memcpy(h + 36, "data", 4);
        le32(h + 40, (0xffffffffu - 36) / align * align);
        for (size_t done = 0; done < sizeof h;) {
            ssize_t k = write(fd, h + done, sizeof h - done);
            if (k < 0 && errno == EINTR)
                continue;
            if (k < 0) {
                *why = strerror(errno);
                return -1;
            }
            done += (size_t)k;
        }
        info.format = SF_FORMAT_RAW | SF_FORMAT_PCM_16 | SF_ENDIAN_LITTLE;
    }
    SNDFILE *f = sf_open_fd(fd, SFM_WRITE, &info, SF_FALSE);
    if (f == NULL) {
        *why = sf_reason(NULL);
        return -1;
    }
    *w = (sound_writer){f, fd, channels};
    return 0;
}

int sound_reader_open(sound_reader *r, int fd, const char **why)
{
    SF_INFO info = {0};
    SNDFILE *f = sf_open_fd(fd, SFM_READ, &info, SF_FALSE);
    if (f == NULL) {
        *why = sf_reason(NULL);
        return -1;
    }
    *r = (sound_reader){f, info.channels, info.samplerate};
    return 0;
}

long sound_reader_read(sound_reader *r, double *x, size_t n, const char **why)
{
    size_t got = 0;
    /* libsndfile returns short counts from a pipe mid-stream too: loop
     * until n frames or the end. */
    while (got < n) {
        sf_count_t k = sf_readf_double(r->sf, x + got * (size_t)r->channels,
                                       (sf_count_t)(n - got));
        if (k <= 0) {
            if (sf_error(r->sf) != SF_ERR_NO_ERROR) {
                *why = sf_reason(r->sf);
                return -1;
            }
            break;
        }
        got += (size_t)k;
    }
    return (long)got;
}

void sound_reader_close(sound_reader *r)
{
    if (r->sf != NULL)
        sf_close(r->sf);
    r->sf = NULL;
}

int sound_write(sound_writer *w, const double *x, size_t n, const char **why)
{
    /* Clipped here rather than by SFC_SET_CLIPPING, which maps -1.5 to
     * -32768 where -1 gives -32767: every sample beyond [-1, 1] gets what
     * its bound gets. */
    double buf[CHUNK];
    const size_t per = CHUNK / (size_t)w->channels;
    while (n > 0) {
        size_t m = n < per ? n : per, total = m * (size_t)w->channels;
        for (size_t i = 0; i < total; i++)
            buf[i] = x[i] > 1.0 ? 1.0 : x[i] < -1.0 ? -1.0 : x[i];
        if (sf_writef_double(w->sf, buf, (sf_count_t)m) != (sf_count_t)m) {
            *why = sf_reason(w->sf);
            return -1;
        }
        x += total;
        n -= m;
    }
    return 0;
}

int sound_close(sound_writer *w, const char **why)
{
    int rc = sf_close(w->sf);
    if (rc != 0 && why != NULL)
        *why = sf_error_number(rc);
    if (close(w->fd) != 0 && rc == 0) {
        if (why != NULL)
            *why = strerror(errno);
        rc = -1;
    }
    w->sf = NULL;
    w->fd = -1;
    return rc != 0 ? -1 : 0;
}

/* Frames of `from` channels (1 or 2) appended as `to` channels. */
static void mix(double *out, int to, const double *in, int from, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (from == to) {
            for (int c = 0; c < to; c++)
                out[to * i + c] = in[from * i + c];
        } else if (to == 2) {
            out[2 * i] = out[2 * i + 1] = in[i];
        } else {
            out[i] = (in[2 * i] + in[2 * i + 1]) / 2;
        }
    }
}

/* n frames at rate `from` to rate `to` by linear interpolation: frame j is
 * at j * from / to input frames, computed in integers so the length and the
 * positions are exact. NULL (ENOMEM) or the new array, *out_n frames. */
static double *resample(const double *x, size_t n, int channels, int from, int to,
                        size_t max, size_t *out_n)
{
    uint64_t m = (uint64_t)n * (uint64_t)to / (uint64_t)from;
    if (m > max)
        m = max;
    if (m == 0)
        m = 1;
    double *y = malloc((size_t)m * (size_t)channels * sizeof *y);
    if (y == NULL)
        return NULL;
    for (uint64_t j = 0; j < m; j++) {
        uint64_t at = j * (uint64_t)from;
        size_t i = (size_t)(at / (uint64_t)to), i1 = i + 1 < n ? i + 1 : n - 1;
        double frac = (double)(at % (uint64_t)to) / (double)to;
        for (int c = 0; c < channels; c++) {
            double a = x[i * (size_t)channels + (size_t)c];
            double b = x[i1 * (size_t)channels + (size_t)c];
            y[(size_t)j * (size_t)channels + (size_t)c] = a + frac * (b - a);
        }
    }
    *out_n = (size_t)m;
    return y;
}

double *sound_read(const char *path, int channels, int rate, size_t max_frames, size_t *frames,
                   const char **why)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        fd = -1;
        errno = EISDIR; /* libsndfile would say "Format not recognised" */
    }
    if (fd < 0) {
        *why = strerror(errno);
        return NULL;
    }
    SF_INFO info = {0};
    SNDFILE *f = sf_open_fd(fd, SFM_READ, &info, SF_FALSE);
    if (f == NULL) {
        *why = sf_reason(NULL);
        close(fd);
        return NULL;
    }
    double *x = NULL, buf[2 * CHUNK];
    size_t n = 0, cap = 0;
    /* Input frames enough for max_frames output frames, and one more for
     * the interpolation of the last. */
    const uint64_t in_max = (uint64_t)max_frames * (uint64_t)info.samplerate / (uint64_t)rate + 2;
    *why = NULL;
    if (info.channels < 1 || info.channels > 2) {
        snprintf(reason, sizeof reason, "%d channels: the samples read mono or stereo",
                 info.channels);
        *why = reason;
    }
    while (*why == NULL && n < in_max) {
        sf_count_t want = (sf_count_t)(in_max - n < CHUNK ? in_max - n : CHUNK);
        sf_count_t got = sf_readf_double(f, buf, want);
        if (got <= 0) {
            if (sf_error(f) != SF_ERR_NO_ERROR)
                *why = sf_reason(f);
            break;
        }
        if (n + (size_t)got > cap) {
            size_t ncap = cap > 0 ? 2 * cap : 16 * CHUNK;
            double *nx = realloc(x, ncap * (size_t)channels * sizeof *x);
            if (nx == NULL) {
                *why = strerror(ENOMEM);
                break;
            }
            x = nx;
            cap = ncap;
        }
        mix(x + n * (size_t)channels, channels, buf, info.channels, (size_t)got);
        n += (size_t)got;
    }
    sf_close(f);
    close(fd);
    if (*why == NULL && n == 0)
        *why = "no frames to read";
    if (*why != NULL) {
        free(x);
        return NULL;
    }
    if (info.samplerate == rate) {
        *frames = n < max_frames ? n : max_frames;
        return x;
    }
    double *y = resample(x, n, channels, info.samplerate, rate, max_frames, frames);
    free(x);
    if (y == NULL)
        *why = strerror(ENOMEM);
    return y;
}
