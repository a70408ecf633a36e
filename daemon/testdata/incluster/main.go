// Command incluster is a pod's client-go program for the ServiceAccount
// tests: it reaches the API as rest.InClusterConfig() sets it up (the
// kubernetes Service's variables, the mounted token and ca.crt, TLS
// verified), prints what it finds as key=value lines, then waits.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func main() {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		fmt.Printf("error=%v\n", err)
		os.Exit(1)
	}
	fmt.Printf("host=%s\n", cfg.Host)
	c := kubernetes.NewForConfigOrDie(cfg)
	for {
		v, err := c.Discovery().ServerVersion()
		if err == nil {
			fmt.Printf("version=%s\n", v.GitVersion)
			break
		}
		fmt.Printf("waiting=%v\n", err)
		time.Sleep(200 * time.Millisecond)
	}
	// The API by its Service's DNS name, the certificate checked for it.
	byName := rest.CopyConfig(cfg)
	byName.Host = "https://kubernetes.default.svc"
	if v, err := kubernetes.NewForConfigOrDie(byName).Discovery().ServerVersion(); err == nil {
		fmt.Printf("byname=%s\n", v.GitVersion)
	} else {
		fmt.Printf("byname=%v\n", err)
	}
	ns, _ := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	_, err = c.CoreV1().Pods(string(ns)).List(context.Background(), metav1.ListOptions{})
	fmt.Printf("first=%d\n", code(err))
	for err != nil {
		time.Sleep(200 * time.Millisecond)
		_, err = c.CoreV1().Pods(string(ns)).List(context.Background(), metav1.ListOptions{})
	}
	fmt.Println("listed=200")
	select {}
}

// code is the HTTP status of an API error, 200 for none.
func code(err error) int32 {
	if err == nil {
		return 200
	}
	if s, ok := err.(apierrors.APIStatus); ok {
		return s.Status().Code
	}
	fmt.Printf("error=%v\n", err)
	return 0
}
