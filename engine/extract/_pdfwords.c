/* engine.extract._pdfwords: the words of a PyMuPDF text page as two flat buffers.

Owns: one function, ``page_words(stext_page_address, context_address,
skip_quad_corrections, small_glyph_heights)``, that walks a MuPDF
``fz_stext_page`` exactly as PyMuPDF 1.26's ``TextPage.extractWORDS()`` does
(same word delimiters, right-to-left splits, zero-width-joiner rule, MediaBox
clip and ``JM_char_quad`` box corrections; src/extra.i of PyMuPDF) and returns
``(records, code_points)``: ``records`` is n packed little-endian records
``x0, y0, x1, y1`` (float32, what extractWORDS' Python floats hold),
``block, line, nchars`` (int32), ``code_points`` the words' characters
(uint32, concatenated; what extractWORDS' strings decode to). No Python object
per word: ~4x cheaper than extractWORDS on the test corpus. The GIL is released
while walking. MuPDF errors raise RuntimeError (the caller falls back to
PyMuPDF). ``mupdf_version()``: the MuPDF headers this was compiled against
(``engine.extract.pdfwords`` uses it only when it equals PyMuPDF's).
Built by setup.py (optional); links the libmupdf PyMuPDF ships, found loaded by its soname. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "mupdf/fitz.h"

typedef struct { float x0, y0, x1, y1; int32_t block, line, nchars; } word_t;

typedef struct {
    word_t *words; uint32_t *codes;
    size_t n, cap, ncodes, capcodes;
    uint32_t *word; size_t wlen, wcap;
    int oom;
} acc_t;

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 256;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q) return -1;
    *p = q; *cap = c; return 0;
}

/* JM_char_quad of PyMuPDF's extra.i, line by line. */
static fz_quad char_quad(fz_context *ctx, fz_stext_line *line, fz_stext_char *ch, int skip, int small) {
    if (skip) return ch->quad;
    if (line->wmode) return ch->quad;
    fz_font *font = ch->font;
    float asc = fz_font_ascender(ctx, font);
    float dsc = fz_font_descender(ctx, font);
    float c, s, fsize = ch->size;
    float asc_dsc = asc - dsc + FLT_EPSILON;
    if (asc_dsc >= 1 && small == 0) return ch->quad;
    if (asc < 1e-3) { dsc = -0.1f; asc = 0.9f; asc_dsc = 1.0f; }
    if (small || asc_dsc < 1) { dsc = dsc / asc_dsc; asc = asc / asc_dsc; }
    asc_dsc = asc - dsc;
    asc = asc * fsize / asc_dsc;
    dsc = dsc * fsize / asc_dsc;
    fz_matrix trm1, trm2, xlate1, xlate2;
    fz_quad quad;
    c = line->dir.x; s = line->dir.y;
    trm1 = fz_make_matrix(c, -s, s, c, 0, 0);
    trm2 = fz_make_matrix(c, s, -s, c, 0, 0);
    if (c == -1) { trm1.d = 1; trm2.d = 1; }
    xlate1 = fz_make_matrix(1, 0, 0, 1, -ch->origin.x, -ch->origin.y);
    xlate2 = fz_make_matrix(1, 0, 0, 1, ch->origin.x, ch->origin.y);
    quad = fz_transform_quad(ch->quad, xlate1);
    quad = fz_transform_quad(quad, trm1);
    if (c == 1 && quad.ul.y > 0) {
        quad.ul.y = asc; quad.ur.y = asc; quad.ll.y = dsc; quad.lr.y = dsc;
    } else {
        quad.ul.y = -asc; quad.ur.y = -asc; quad.ll.y = -dsc; quad.lr.y = -dsc;
    }
    if (quad.ll.x < 0) { quad.ll.x = 0; quad.ul.x = 0; }
    float cwidth = quad.lr.x - quad.ll.x;
    if (cwidth < FLT_EPSILON) {
        int glyph = fz_encode_character(ctx, font, ch->c);
        if (glyph) {
            float fwidth = fz_advance_glyph(ctx, font, glyph, line->wmode);
            quad.lr.x = quad.ll.x + fwidth * fsize;
            quad.ur.x = quad.lr.x;
        }
    }
    quad = fz_transform_quad(quad, trm2);
    quad = fz_transform_quad(quad, xlate2);
    return quad;
}

static fz_rect char_bbox(fz_context *ctx, fz_stext_line *line, fz_stext_char *ch, int skip, int small) {
    fz_rect r = fz_rect_from_quad(char_quad(ctx, line, ch, skip, small));
    if (!line->wmode) return r;
    if (r.y1 < r.y0 + ch->size) r.y0 = r.y1 - ch->size;
    return r;
}

static int overlap(fz_rect a, fz_rect b) {
    return !(a.x0 >= b.x1 || a.y0 >= b.y1 || a.x1 <= b.x0 || a.y1 <= b.y0);
}

static void append_word(acc_t *a, fz_rect *w, int block_n, int line_n) {
    if (grow((void **)&a->words, &a->cap, a->n + 1, sizeof(word_t))) { a->oom = 1; return; }
    word_t *r = a->words + a->n;
    r->x0 = w->x0; r->y0 = w->y0; r->x1 = w->x1; r->y1 = w->y1;
    r->block = block_n; r->line = line_n; r->nchars = (int32_t)a->wlen;
    if (grow((void **)&a->codes, &a->capcodes, a->ncodes + a->wlen, sizeof(uint32_t))) { a->oom = 1; return; }
    memcpy(a->codes + a->ncodes, a->word, a->wlen * sizeof(uint32_t));
    a->ncodes += a->wlen;
    a->n++;
    *w = fz_empty_rect;
}

static uint32_t decoded(int c) {  /* what JM_append_rune + raw-unicode-escape "replace" give */
    if (c >= 0xd800 && c <= 0xdfff) return 0xfffd;
    if ((unsigned)c > 0x10ffff) return 0xfffd;
    return (uint32_t)c;
}

/* _as_words of PyMuPDF's extra.i: blocks (recursing into structure blocks) -> words. */
static int blocks(fz_context *ctx, fz_stext_block *block, fz_rect tp_rect, acc_t *a, int block_n, int skip, int small) {
    int infinite = fz_is_infinite_rect(tp_rect);
    for (; block && !a->oom; block = block->next) {
        if (block->type == FZ_STEXT_BLOCK_STRUCT) {
            if (block->u.s.down)
                block_n = blocks(ctx, block->u.s.down->first_block, tp_rect, a, block_n, skip, small);
            continue;
        }
        if (block->type != FZ_STEXT_BLOCK_TEXT) continue;
        block_n++;
        fz_rect wbbox = fz_empty_rect;
        int line_n = -1;
        for (fz_stext_line *line = block->u.t.first_line; line; line = line->next) {
            line_n++;
            a->wlen = 0;
            int last_rtl = 0;
            for (fz_stext_char *ch = line->first_char; ch; ch = ch->next) {
                fz_rect cb = char_bbox(ctx, line, ch, skip, small);
                if (!overlap(tp_rect, cb) && !infinite) continue;
                if (a->wlen == 0 && ch->c == 0x200d) continue;
                int c = ch->c;
                int delim = c <= 32 || c == 160 || (0x202a <= c && c <= 0x202e);
                int rtl = !(c < 0x590 || c > 0x900);
                if (delim || rtl != last_rtl) {
                    if (a->wlen == 0 && delim) continue;
                    if (!fz_is_empty_rect(wbbox)) append_word(a, &wbbox, block_n, line_n);
                    a->wlen = 0;
                    if (delim) continue;
                }
                if (grow((void **)&a->word, &a->wcap, a->wlen + 1, sizeof(uint32_t))) { a->oom = 1; return block_n; }
                a->word[a->wlen++] = decoded(c);
                last_rtl = rtl;
                wbbox = fz_union_rect(wbbox, cb);
            }
            if (a->wlen && !fz_is_empty_rect(wbbox)) append_word(a, &wbbox, block_n, line_n);
            a->wlen = 0;
        }
    }
    return block_n;
}

static PyObject *page_words(PyObject *self, PyObject *args) {
    unsigned long long page_addr, ctx_addr;
    int skip, small;
    if (!PyArg_ParseTuple(args, "KKii", &page_addr, &ctx_addr, &skip, &small)) return NULL;
    fz_stext_page *page = (fz_stext_page *)(uintptr_t)page_addr;
    fz_context *ctx = (fz_context *)(uintptr_t)ctx_addr;
    acc_t a; memset(&a, 0, sizeof a);
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    fz_try(ctx)
        blocks(ctx, page->first_block, page->mediabox, &a, -1, skip, small);
    fz_catch(ctx)
        failed = 1;
    Py_END_ALLOW_THREADS
    PyObject *out = NULL;
    if (failed) PyErr_SetString(PyExc_RuntimeError, "MuPDF error while reading words");
    else if (a.oom) PyErr_NoMemory();
    else {
        out = Py_BuildValue("(y#y#)", a.words ? (const char *)a.words : "", (Py_ssize_t)(a.n * sizeof(word_t)),
                            a.codes ? (const char *)a.codes : "", (Py_ssize_t)(a.ncodes * sizeof(uint32_t)));
    }
    free(a.words); free(a.codes); free(a.word);
    return out;
}

/* fill_text(out, codes, lengths, kinds, seplen): the PDF layout's text as code points
 * (engine/extract/pdf.py _place_words). Word i is preceded by seplen[i] characters of its
 * separator kind (0: form feeds, 1: space, 2 and 3: newlines) and then its lengths[i] code
 * points, taken in order from codes; form feeds fill the rest of out.
 * out: writable uint32; codes: uint32; lengths, seplen: int64; kinds: int8 (C-contiguous). */
static PyObject *fill_text(PyObject *self, PyObject *args) {
    Py_buffer out, codes, lengths, kinds, seplen;
    if (!PyArg_ParseTuple(args, "w*y*y*y*y*", &out, &codes, &lengths, &kinds, &seplen)) return NULL;
    PyObject *res = NULL;
    Py_ssize_t total = out.len / 4, ncodes = codes.len / 4, n = lengths.len / 8, pos = 0, at = 0, i, j;
    uint32_t *o = (uint32_t *)out.buf;
    const uint32_t *c = (const uint32_t *)codes.buf;
    const int64_t *len = (const int64_t *)lengths.buf, *sl = (const int64_t *)seplen.buf;
    const int8_t *k = (const int8_t *)kinds.buf;
    int bad = (kinds.len != n || seplen.len / 8 != n);
    for (i = 0; i < n && !bad; i++) {
        int64_t s = sl[i], L = len[i];
        if (s < 0 || L < 0 || s > total - pos || L > total - pos - s || L > ncodes - at) { bad = 1; break; }
        uint32_t fill = k[i] == 0 ? 12 : (k[i] == 1 ? 32 : 10);
        for (j = 0; j < s; j++) o[pos + j] = fill;
        pos += s;
        memcpy(o + pos, c + at, (size_t)L * 4);
        pos += L; at += L;
    }
    if (!bad && at != ncodes) bad = 1;
    if (bad) PyErr_SetString(PyExc_ValueError, "fill_text: columns do not fit the text");
    else {
        for (; pos < total; pos++) o[pos] = 12;
        res = Py_None; Py_INCREF(res);
    }
    PyBuffer_Release(&out); PyBuffer_Release(&codes); PyBuffer_Release(&lengths);
    PyBuffer_Release(&kinds); PyBuffer_Release(&seplen);
    return res;
}

/* numpy's own float max/min/clip (NaN propagates; a tie gives the second operand). */
#define NP_MAX(a, b) (isnan(a) ? (a) : ((a) > (b) ? (a) : (b)))
#define NP_MIN(a, b) (isnan(a) ? (a) : ((a) < (b) ? (a) : (b)))
#define NP_CLIP01(x) NP_MIN(NP_MAX((x), 0.0), 1.0)

/* fill_boxes(out, corners, affine, per_page): the PDF layout's word boxes
 * (engine/extract/pdf.py _place_words): each word's page row (ma, mb, mc, md, me, mf) maps
 * its unrotated corners (x0, y0, x1, y1) to displayed-page fractions, then x, y, w, h sorted
 * and clamped to 0..1, with numpy's operation order (no fused multiply-add).
 * out, corners: float64 (n, 4); affine: float64 (pages, 6); per_page: int64, sums to n. */
__attribute__((optimize("fp-contract=off")))
static PyObject *fill_boxes(PyObject *self, PyObject *args) {
    Py_buffer out, corners, affine, per_page;
    if (!PyArg_ParseTuple(args, "w*y*y*y*", &out, &corners, &affine, &per_page)) return NULL;
    PyObject *res = NULL;
    Py_ssize_t n = corners.len / 32, pages = per_page.len / 8, w = 0, p, j;
    double *o = (double *)out.buf;
    const double *c = (const double *)corners.buf, *m = (const double *)affine.buf;
    const int64_t *count = (const int64_t *)per_page.buf;
    int bad = (out.len != corners.len || affine.len / 48 != pages);
    for (p = 0; p < pages && !bad; p++) {
        if (count[p] < 0 || count[p] > n - w) { bad = 1; break; }
        double ma = m[6 * p], mb = m[6 * p + 1], mc = m[6 * p + 2], md = m[6 * p + 3], me = m[6 * p + 4],
               mf = m[6 * p + 5];
        for (j = 0; j < count[p]; j++, w++) {
            const double *q = c + 4 * w;
            double px0 = q[0], py0 = q[1], px1 = q[2], py1 = q[3];
            double t, u0, u1, v0, v1;
            t = ma * px0; u0 = t + mc * py0; u0 = u0 + me;
            t = ma * px1; u1 = t + mc * py1; u1 = u1 + me;
            t = mb * px0; v0 = t + md * py0; v0 = v0 + mf;
            t = mb * px1; v1 = t + md * py1; v1 = v1 + mf;
            double lo_u = NP_MIN(u0, u1), lo_v = NP_MIN(v0, v1), hi_u = NP_MAX(u0, u1), hi_v = NP_MAX(v0, v1);
            lo_u = NP_CLIP01(lo_u); lo_v = NP_CLIP01(lo_v); hi_u = NP_CLIP01(hi_u); hi_v = NP_CLIP01(hi_v);
            double *r = o + 4 * w;
            r[0] = lo_u; r[1] = lo_v; r[2] = hi_u - lo_u; r[3] = hi_v - lo_v;
        }
    }
    if (!bad && w != n) bad = 1;
    if (bad) PyErr_SetString(PyExc_ValueError, "fill_boxes: columns do not fit");
    else { res = Py_None; Py_INCREF(res); }
    PyBuffer_Release(&out); PyBuffer_Release(&corners); PyBuffer_Release(&affine); PyBuffer_Release(&per_page);
    return res;
}

static PyObject *version(PyObject *self, PyObject *args) { return PyUnicode_FromString(FZ_VERSION); }

static PyMethodDef methods[] = {
    {"page_words", page_words, METH_VARARGS, "words of a text page as (records, code points) bytes"},
    {"fill_text", fill_text, METH_VARARGS, "the PDF layout's text code points (pdf.py _place_words)"},
    {"fill_boxes", fill_boxes, METH_VARARGS, "the PDF layout's word boxes (pdf.py _place_words)"},
    {"mupdf_version", version, METH_NOARGS, "MuPDF version compiled against"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_pdfwords", NULL, -1, methods};

PyMODINIT_FUNC PyInit__pdfwords(void) { return PyModule_Create(&mod); }
