package api

import (
	"bytes"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// mediaProtobuf is Kubernetes' protobuf encoding, which typed clients
// (kubectl create job, kubectl debug) use for request bodies.
const mediaProtobuf = "application/vnd.kubernetes.protobuf"

// protobufMagic starts every Kubernetes protobuf message ("k8s\0").
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// protoUnmarshaler is implemented by the generated API types.
type protoUnmarshaler interface{ Unmarshal([]byte) error }

// decodeProtobuf decodes a Kubernetes protobuf envelope (magic, then a
// runtime.Unknown carrying the type and the raw message) into obj and
// returns the envelope's group version kind.
func decodeProtobuf(data []byte, obj any, prefix string) (schema.GroupVersionKind, error) {
	if !bytes.HasPrefix(data, protobufMagic) {
		return schema.GroupVersionKind{}, apierrors.NewBadRequest(prefix + "provided data does not appear to be a protobuf message")
	}
	var unknown runtime.Unknown
	if err := unknown.Unmarshal(data[len(protobufMagic):]); err != nil {
		return schema.GroupVersionKind{}, apierrors.NewBadRequest(fmt.Sprintf("%s%v", prefix, err))
	}
	u, ok := obj.(protoUnmarshaler)
	if !ok {
		return schema.GroupVersionKind{}, unsupportedMediaType(mediaProtobuf)
	}
	if err := u.Unmarshal(unknown.Raw); err != nil {
		return schema.GroupVersionKind{}, apierrors.NewBadRequest(fmt.Sprintf("%s%v", prefix, err))
	}
	return schema.FromAPIVersionAndKind(unknown.APIVersion, unknown.Kind), nil
}
