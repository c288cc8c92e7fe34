// Calls into libmosquitto through pointers found with dlsym, the library opened on first use
// (see CMosquitto.h for why).
#include "CMosquitto.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

static void *library;
static const char *failure = "libmosquitto was not loaded";
static pthread_once_t once = PTHREAD_ONCE_INIT;

#define FUNCTIONS(X) \
    X(lib_init) X(new) X(destroy) X(int_option) X(threaded_set) X(username_pw_set) X(tls_set) X(will_set) \
    X(connect_callback_set) X(disconnect_callback_set) X(message_callback_set) X(publish_callback_set) X(subscribe_callback_set) \
    X(connect_async) X(reconnect_async) X(loop) X(disconnect) X(subscribe) X(unsubscribe) X(publish) X(strerror) \
    X(connack_string)

#define POINTER(name) static __typeof__(&mosquitto_##name) p_##name;
FUNCTIONS(POINTER)

static void load(void) {
    library = dlopen("libmosquitto.so.1", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        failure = dlerror();
        return;
    }
#define RESOLVE(name) \
    p_##name = (__typeof__(p_##name))dlsym(library, "mosquitto_" #name); \
    if (p_##name == NULL) { failure = "libmosquitto lacks mosquitto_" #name; library = NULL; return; }
    FUNCTIONS(RESOLVE)
}

bool seance_mosquitto_load(void) {
    pthread_once(&once, load);
    return library != NULL;
}

const char *seance_mosquitto_error(void) { return failure; }

int seance_mosquitto_lib_init(void) { return p_lib_init(); }
struct mosquitto *seance_mosquitto_new(const char *id, bool clean, void *obj) { return p_new(id, clean, obj); }
void seance_mosquitto_destroy(struct mosquitto *m) { p_destroy(m); }
int seance_mosquitto_int_option(struct mosquitto *m, enum mosq_opt_t o, int v) { return p_int_option(m, o, v); }
int seance_mosquitto_threaded_set(struct mosquitto *m, bool t) { return p_threaded_set(m, t); }
int seance_mosquitto_username_pw_set(struct mosquitto *m, const char *u, const char *p) { return p_username_pw_set(m, u, p); }
int seance_mosquitto_tls_set(struct mosquitto *m, const char *ca, const char *capath, const char *cert, const char *key,
                             int (*cb)(char *, int, int, void *)) {
    return p_tls_set(m, ca, capath, cert, key, cb);
}
int seance_mosquitto_will_set(struct mosquitto *m, const char *t, int n, const void *p, int q, bool r) { return p_will_set(m, t, n, p, q, r); }
void seance_mosquitto_connect_callback_set(struct mosquitto *m, void (*cb)(struct mosquitto *, void *, int)) { p_connect_callback_set(m, cb); }
void seance_mosquitto_disconnect_callback_set(struct mosquitto *m, void (*cb)(struct mosquitto *, void *, int)) {
    p_disconnect_callback_set(m, cb);
}
void seance_mosquitto_message_callback_set(struct mosquitto *m, void (*cb)(struct mosquitto *, void *, const struct mosquitto_message *)) {
    p_message_callback_set(m, cb);
}
void seance_mosquitto_publish_callback_set(struct mosquitto *m, void (*cb)(struct mosquitto *, void *, int)) { p_publish_callback_set(m, cb); }
void seance_mosquitto_subscribe_callback_set(struct mosquitto *m, void (*cb)(struct mosquitto *, void *, int, int, const int *)) {
    p_subscribe_callback_set(m, cb);
}
int seance_mosquitto_connect_async(struct mosquitto *m, const char *h, int port, int k) { return p_connect_async(m, h, port, k); }
int seance_mosquitto_reconnect_async(struct mosquitto *m) { return p_reconnect_async(m); }
int seance_mosquitto_loop(struct mosquitto *m, int t, int n) { return p_loop(m, t, n); }
int seance_mosquitto_disconnect(struct mosquitto *m) { return p_disconnect(m); }
int seance_mosquitto_subscribe(struct mosquitto *m, int *mid, const char *s, int q) { return p_subscribe(m, mid, s, q); }
int seance_mosquitto_unsubscribe(struct mosquitto *m, int *mid, const char *s) { return p_unsubscribe(m, mid, s); }
int seance_mosquitto_publish(struct mosquitto *m, int *mid, const char *t, int n, const void *p, int q, bool r) {
    return p_publish(m, mid, t, n, p, q, r);
}
const char *seance_mosquitto_strerror(int e) { return p_strerror ? p_strerror(e) : "libmosquitto is not loaded"; }
const char *seance_mosquitto_connack_string(int c) { return p_connack_string ? p_connack_string(c) : "libmosquitto is not loaded"; }
