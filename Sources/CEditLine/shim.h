#ifndef SEANCE_CEDITLINE_SHIM_H
#define SEANCE_CEDITLINE_SHIM_H

// libedit's el_set, el_get and history are variadic; Swift cannot call them.
// These typed wrappers cover exactly the calls seance makes.

#include <histedit.h>
#include <locale.h>
#include <stdio.h>
#include <wchar.h>

typedef char *(*seance_prompt_fn)(EditLine *);
typedef unsigned char (*seance_command_fn)(EditLine *, int);

static inline int seance_el_set_editor(EditLine *el, const char *mode) {
    return el_set(el, EL_EDITOR, mode);
}
static inline int seance_el_set_prompt(EditLine *el, seance_prompt_fn fn, char ignore) {
    return el_set(el, EL_PROMPT_ESC, fn, ignore);
}
static inline int seance_el_set_getc(EditLine *el, el_rfunc_t fn) {
    return el_set(el, EL_GETCFN, fn);
}
static inline int seance_el_set_clientdata(EditLine *el, void *data) {
    return el_set(el, EL_CLIENTDATA, data);
}
static inline void *seance_el_get_clientdata(EditLine *el) {
    void *data = NULL;
    el_get(el, EL_CLIENTDATA, &data);
    return data;
}
static inline int seance_el_set_history(EditLine *el, History *h) {
    return el_set(el, EL_HIST, history, h);
}
static inline int seance_el_addfn(EditLine *el, const char *name, const char *help, seance_command_fn fn) {
    return el_set(el, EL_ADDFN, name, help, fn);
}
static inline int seance_el_bind(EditLine *el, const char *key, const char *fn) {
    return el_set(el, EL_BIND, key, fn, NULL);
}
static inline int seance_el_refresh(EditLine *el) {
    return el_set(el, EL_REFRESH);
}
static inline int seance_el_set_signal(EditLine *el, int on) {
    return el_set(el, EL_SIGNAL, on);
}
static inline int seance_el_prep_term(EditLine *el, int on) {
    return el_set(el, EL_PREP_TERM, on);
}

static inline int seance_history_setsize(History *h, int size) {
    HistEvent ev;
    return history(h, &ev, H_SETSIZE, size);
}
static inline int seance_history_setunique(History *h, int unique) {
    HistEvent ev;
    return history(h, &ev, H_SETUNIQUE, unique);
}
static inline int seance_history_enter(History *h, const char *line) {
    HistEvent ev;
    return history(h, &ev, H_ENTER, line);
}

#endif
