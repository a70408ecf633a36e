// Package kube holds Kubernetes' rules about objects, each written once,
// for every component of skiffd to call: the API's handlers, the Job
// controller, the pod worker, the other controllers. When kube-apiserver,
// a Kubernetes controller and the kubelet each apply a rule, skiff applies
// it here and nowhere else.
//
// It is a leaf: it imports k8s.io/api, apimachinery and k8s.io/utils, and
// nothing of skiff (deps_test.go). Its functions are pure — they take and
// change objects, never a store, a clock or a container — so a writer can
// call them inside its own store transaction; where a rule needs to look
// something up (the namespace of a new object), the caller reads it in that
// transaction and passes it in.
//
// # Strategies (kube-apiserver's registry)
//
//	pod_strategy.go       PodStrategy: PrepareForCreate (defaults, enableServiceLinks,
//	                      the binding to this node, phase Pending and the QoS class)
//	                      and Create (prepare, validate, admit) for writers other than
//	                      the API; PreparePodForUpdate, PreparePodForStatusUpdate
//	pod_defaults.go       pod spec and container defaults (SetDefaults_PodSpec, …)
//	pod_gates.go          the fields of gates off by default, dropped on write
//	pod_validation.go     ValidatePodCreate, containers; pod_volumes.go: volumes, mounts;
//	                      pod_sysctls.go: sysctl names and the host's namespaces
//	pod_update.go         ValidatePodUpdate: what an update of a running pod may change
//	pod_status_validation.go  ValidatePodStatusUpdate, for API clients writing status
//	pod_ephemeral.go      the ephemeralcontainers subresource's validation
//	job_strategy.go       PrepareJobForCreate/Update/StatusUpdate; JobStrategy.Create for
//	                      writers other than the API (the CronJob controller)
//	job_defaults.go       Job defaults, the generated selector and labels
//	job_validation*.go    ValidateJob, ValidateJobUpdate, ValidateJobStatusUpdate,
//	                      podFailurePolicy, successPolicy, index sets
//	podtemplate.go        PodTemplate strategy and validation (the template as a Job's)
//	cronjob.go            CronJob strategy and defaults, CronJobSchedule (the schedule
//	                      in its time zone, parsed as kube does), CronJobJobName
//	cronjob_validation.go ValidateCronJob, ValidateCronJobUpdate
//	service_*.go          Service defaults (IP families, ClusterIPs kept on update),
//	                      validation; endpoints.go, endpointslice.go likewise
//	namespace_strategy.go a namespace's phase, finalizer and name label;
//	                      event.go, node.go: Events' and the Node's rules
//	meta.go, admission.go ValidateObjectMeta; AdmitNamespace (NamespaceLifecycle)
//	pod_serviceaccount.go PodStrategy.Admit: the ServiceAccount admission (the account,
//	                      the kube-api-access volume, the account's imagePullSecrets)
//	runtimeclass.go       RuntimeClass validation and warnings, and PodStrategy.Admit's
//	                      RuntimeClass admission (a missing class refused, overhead set,
//	                      scheduling merged: MergeTolerations)
//	serviceaccount.go     the ServiceAccount strategy; service_env.go: the kubelet's
//	                      variables of a Service (ServiceEnv) and which Services a
//	                      container gets (ServiceLinkEnv, enableServiceLinks)
//	grace.go              DeletionGrace: the grace period of a deletion
//	job.go                IsJobFinished, JobFinishedCondition, IsJobConditionTrue, IsIndexedJob
//
// Every writer of a Pod goes through the same strategy, as in Kubernetes:
// the API's POST /pods calls PodStrategy.PrepareForCreate and
// ValidatePodCreate in its generic create path; the Job controller calls
// PodStrategy.Create for each pod it makes, inside the transaction that
// counts the Job's pods. A Job's pod and a bare pod from the same template
// are therefore defaulted, validated and admitted by the same code.
//
// # Facts about a pod
//
//	qos.go        QOSClass (kube's ComputePodQOS), ContainerRequests
//	pod.go        IsPodTerminal, IsPodReady, ContainerStatus, PodContainerStatus (across the
//	              three status lists), FindContainer, ContainerKind, IsSidecar
//	restart.go    ContainerRestarts: does the kubelet start a container again
//	containerid.go  ContainerID, ParseContainerID: "containerd://<id>"
//	logpath.go    ContainerLogPath, PodLogDir: the kubelet's /var/log/pods layout
//	node.go       Allocatable, DefaultMaxPods
//
// # Fidelity
//
// Each rule names the Kubernetes function it follows (v1.34) and keeps its
// field paths, reasons and messages, so that a client sees what a cluster
// would answer; the tests run Kubernetes' own cases where it has them. Where
// skiff deliberately differs (one node, no scheduler, the Service types it
// serves), a NOTE at the rule says so.
package kube
