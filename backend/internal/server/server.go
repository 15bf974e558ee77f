// Package server builds the Fiber application: the error convention, the
// /api/metrics group, and the features mounted on it.
package server

import (
	"errors"

	"github.com/gofiber/fiber/v2"

	"github.com/mlx-bun/mlx-metrics/shared/apierror"
)

// APIPrefix is where the manifest's routes are mounted.
const APIPrefix = "/api/metrics"

// Feature mounts one responsibility's routes. api is the /api/metrics group;
// root is the app itself, for routes outside it (the standalone page).
type Feature interface {
	Mount(root *fiber.App, api fiber.Router)
}

// Options configure the application.
type Options struct {
	// BodyLimit bounds request bodies (event batches are the largest).
	BodyLimit int
}

// New builds the app with every feature mounted in order.
func New(opts Options, features ...Feature) *fiber.App {
	if opts.BodyLimit == 0 {
		opts.BodyLimit = 32 << 20
	}
	app := fiber.New(fiber.Config{
		AppName:               "mlx-metrics",
		BodyLimit:             opts.BodyLimit,
		DisableStartupMessage: true,
		ErrorHandler:          ErrorHandler,
	})
	api := app.Group(APIPrefix)
	for _, f := range features {
		f.Mount(app, api)
	}
	// Anything unmatched under the API answers in the API's error format.
	api.Use(func(c *fiber.Ctx) error {
		return fiber.NewError(fiber.StatusNotFound, "no route "+c.Method()+" "+c.Path())
	})
	return app
}

// Error answers status with the API's JSON error body.
func Error(c *fiber.Ctx, status int, message string) error {
	return c.Status(status).JSON(apierror.New(status, message))
}

// ErrorHandler turns any error a handler returns into the JSON error body:
// a *fiber.Error keeps its status, anything else is a 500.
func ErrorHandler(c *fiber.Ctx, err error) error {
	status := fiber.StatusInternalServerError
	var fe *fiber.Error
	if errors.As(err, &fe) {
		status = fe.Code
	}
	return Error(c, status, err.Error())
}
