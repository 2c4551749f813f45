# Makefile for libsf's examples, installed with them (make install puts the
# samples' sources here). It builds against the installed libsf through
# pkg-config:
#
#     cp -r <this directory> ~/sf-examples && cd ~/sf-examples && make
#     ./fib 30
#
# The audio examples (sfpiece, reverb, granular, stream) also need libsndfile
# (apt-get install libsndfile1-dev): `make audio`; the JACK client needs
# libjack as well (apt-get install libjack-jackd2-dev): `make jack`. If libsf is installed
# under a prefix the linker does not search, run `make` with
# PKG_CONFIG_PATH=<libdir>/pkgconfig and RPATH=<libdir>.

PKG_CONFIG ?= pkg-config
CFLAGS ?= -O2 -g
SF_CFLAGS := $(shell $(PKG_CONFIG) --cflags sf)
SF_LIBS := $(shell $(PKG_CONFIG) --libs sf)
LDFLAGS += $(if $(RPATH),-Wl$(comma)-rpath$(comma)$(RPATH))
comma := ,

small := fib meh nqueens_search mandelbrot batches
audio := sfpiece reverb granular stream
audio_src := audio/fft.c audio/reverb.c audio/granular.c audio/sound.c

all: $(small)
audio: $(audio)

$(small): %: %.c
	$(CC) -std=c11 -pthread $(CFLAGS) $(SF_CFLAGS) -o $@ $< $(LDFLAGS) $(SF_LIBS) -lm

$(audio): %: %.c $(audio_src)
	$(CC) -std=c11 -pthread $(CFLAGS) $(SF_CFLAGS) -I. $$($(PKG_CONFIG) --cflags sndfile) \
		-o $@ $< $(audio_src) $(LDFLAGS) $(SF_LIBS) $$($(PKG_CONFIG) --libs sndfile) -lm

jack: jack.c $(audio_src)
	$(CC) -std=c11 -pthread $(CFLAGS) $(SF_CFLAGS) -I. $$($(PKG_CONFIG) --cflags sndfile jack) \
		-o $@ $< $(audio_src) $(LDFLAGS) $(SF_LIBS) $$($(PKG_CONFIG) --libs sndfile jack) -lm

clean:
	rm -f $(small) $(audio) jack

.PHONY: all audio clean
