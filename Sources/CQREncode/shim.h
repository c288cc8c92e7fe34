#ifndef SEANCE_CQRENCODE_SHIM_H
#define SEANCE_CQRENCODE_SHIM_H

// libqrencode as it is: QRcode_encodeString and QRcode_free are all seance calls.
#include <qrencode.h>

#endif
