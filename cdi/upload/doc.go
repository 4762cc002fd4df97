// Package upload is CDI's upload path as `virtctl image-upload` uses it:
// short-lived upload tokens naming a namespace and a claim (what the API
// server's uploadtokenrequests resource hands out), and the upload proxy,
// an HTTPS endpoint that checks a request's token and streams its body
// into the DataVolume's volume.
//
// The proxy serves CDI's paths:
//
//   - POST /v1beta1/upload: the body is the image (raw, qcow2 or ISO, gzip
//     or xz compressed); the answer comes once it is in the volume.
//   - POST /v1beta1/upload-async: the same, answered once the data is
//     received; the conversion goes on and the DataVolume says when it is
//     done. HEAD answers 200 so that virtctl finds it.
//   - POST /v1beta1/upload-form and /v1beta1/upload-form-async: the image
//     is the "file" part of a multipart/form-data body.
//   - GET /healthz.
//
// Every upload request carries "Authorization: Bearer TOKEN". A token is
// signed with HMAC-SHA256 by [Tokens]; the proxy and the API server must
// share its key.
package upload
